package worker

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
)

// gatePeople is GitHub as the gate asks it who someone is: each login's
// permission on the repository, the members of teams by "org/slug", a
// refused team check when teamsForbidden, and the comments it posts.
type gatePeople struct {
	laggingComments
	permissions    map[string]string
	members        map[string][]string
	teamsForbidden bool
}

func (p *gatePeople) Permission(_ context.Context, _ ghapp.Repo, user string) (ghapp.Permission, error) {
	return ghapp.Permission(p.permissions[user]), nil
}

func (p *gatePeople) IsTeamMember(_ context.Context, org, slug, login string) (bool, error) {
	if p.teamsForbidden {
		return false, &ghapp.APIError{Method: http.MethodGet, Path: "/orgs/" + org + "/teams/" + slug + "/memberships/" + login, Status: http.StatusForbidden, Message: "Resource not accessible by integration"}
	}
	for _, m := range p.members[org+"/"+slug] {
		if m == login {
			return true, nil
		}
	}
	return false, nil
}

// TestGateAdmit: write access, then the repository's allowed_users and
// allowed_teams, then the budgets decide who gets a job; who is turned
// away gets one reply saying why, and a team check GitHub refuses is a
// configuration error for the requester, naming the permission.
func TestGateAdmit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		yml        string
		permission string
		// members of octo/maintainers (alice's membership is "active"
		// here; ghapp's TestIsTeamMember reads pending as not a member).
		members        []string
		teamsForbidden bool
		// repoSpent is what this repository spent today of its $20.
		repoSpent float64
		// outcome is the refusal's, "" for admitted and "refused" for no
		// write access (permitted says false; the caller owns that
		// outcome); reply a text of the one reply; problem a text of the
		// *repoConfigError.
		outcome outcome.Outcome
		reply   string
		problem string
	}{
		{name: "a writer, no restrictions", permission: "write"},
		{name: "read access only", permission: "read", outcome: "refused", reply: "only people with write access to this repository can ask agentfix"},
		{name: "a writer not in allowed_users", yml: "allowed_users: [bob]\n", permission: "write",
			outcome: outcome.NotAllowed, reply: "limits who may ask agentfix"},
		{name: "listed in allowed_users, in any case", yml: "allowed_users: [ALICE]\n", permission: "admin"},
		{name: "an active member of an allowed team", yml: "allowed_users: [bob]\nallowed_teams: [octo/maintainers]\n",
			permission: "write", members: []string{"alice"}},
		{name: "not a member of the allowed team", yml: "allowed_teams: [octo/maintainers]\n", permission: "write",
			members: []string{"bob"}, outcome: outcome.NotAllowed, reply: "limits who may ask agentfix"},
		{name: "a team check GitHub refuses", yml: "allowed_teams: [octo/maintainers]\n", permission: "write",
			teamsForbidden: true, problem: "allowed_teams: the App may not read team memberships; grant it the organization permission members: read"},
		{name: "the repository's daily budget used up", permission: "write", repoSpent: 20,
			outcome: outcome.OverBudget, reply: "This repository's daily budget of $20.00 is used up: $20.00 spent today (UTC)."},
		{name: "budget left", permission: "write", repoSpent: 19.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rdb := newRedis(t)
			cfg := config.Defaults()
			b, err := budget.New(rdb, budget.LimitsFrom(cfg), budget.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.repoSpent > 0 {
				r, err := b.Reserve(t.Context(), budget.Scope{Installation: hInstall, Repo: hRepo, Job: "earlier"}, budget.Amount{USD: 0.5})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := r.Settle(t.Context(), budget.Amount{USD: tt.repoSpent}); err != nil {
					t.Fatal(err)
				}
			}
			rc, err := config.ParseRepo([]byte(tt.yml))
			if err != nil {
				t.Fatal(err)
			}
			g := &gate{budget: b, replies: newReplier(t, rdb)}
			gh := &gatePeople{permissions: map[string]string{hRequester: tt.permission},
				members: map[string][]string{"octo/maintainers": tt.members}, teamsForbidden: tt.teamsForbidden}
			repo := ghapp.Repo{Owner: "octo", Name: "widget"}
			a := admission{gh: gh, installation: hInstall, repo: repo, number: 7, requester: hRequester, deliveryID: "d-1", job: "job-1"}

			var got outcome.Outcome
			ok, err := g.permitted(t.Context(), gh, repo, 7, false, hRequester, "d-1")
			if err != nil {
				t.Fatalf("permitted: %v", err)
			}
			if !ok {
				got = "refused"
			} else {
				ref, err := g.admit(t.Context(), a, repoSettings{Repo: rc, Limits: cfg.JobLimits()})
				var bad *repoConfigError
				switch {
				case tt.problem != "":
					if !errors.As(err, &bad) || !strings.Contains(bad.Problems, tt.problem) {
						t.Fatalf("admit = %v, want a configuration error with %q", err, tt.problem)
					}
					if gh.posts() != 0 {
						t.Errorf("posted %q, want no reply (the job's failure says it)", gh.created)
					}
					return
				case err != nil:
					t.Fatalf("admit: %v", err)
				case ref != nil:
					got = ref.outcome
				}
			}
			if got != tt.outcome {
				t.Errorf("refusal = %q, want %q", got, tt.outcome)
			}
			switch {
			case tt.reply == "" && gh.posts() != 0:
				t.Errorf("posted %q, want no reply", gh.created)
			case tt.reply != "" && (gh.posts() != 1 || !strings.Contains(gh.created[0], tt.reply)):
				t.Errorf("posted %q, want one reply with %q", gh.created, tt.reply)
			}
		})
	}
}
