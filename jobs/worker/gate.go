package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
)

// gate checks who may ask for work: write access (permission), then the
// repository's allowed_users and allowed_teams and the budgets (admit).
// Who it turns away gets one reply.
type gate struct {
	budget  *budget.Budget
	replies *replier
}

// gateGitHub is what the gate needs of GitHub.
type gateGitHub interface {
	people
	report.Comments
}

// admission is a trigger asking for work in a repository.
type admission struct {
	gh           gateGitHub
	installation int64
	repo         ghapp.Repo
	// number is the issue or pull request the trigger came from; replies
	// go there.
	number     int
	isPR       bool
	requester  string
	deliveryID string
	// job is the job's key (its budget scope); empty at notice time, when
	// only the daily budgets are checked.
	job string
}

// refusal says why a trigger gets no job; the requester was told.
type refusal struct {
	outcome outcome.Outcome
	// detail says why in words, for a status comment.
	detail string
}

// admit checks a trigger against the repository's settings s: the
// requester must pass allowed_users and allowed_teams, and no budget may be
// used up. When one fails it replies once and returns the refusal. The
// reply for a delivery is posted once, so a notice and its job may both
// call admit. A team check GitHub refuses (the App lacks the members: read
// permission) is a *repoConfigError.
func (g *gate) admit(ctx context.Context, a admission, s repoSettings) (*refusal, error) {
	ok, err := s.Repo.MayTrigger(ctx, a.requester, a.gh)
	if ghapp.HTTPStatus(err) == http.StatusForbidden {
		return nil, &repoConfigError{Problems: fmt.Sprintf("%s: allowed_teams: the App may not read team memberships; grant it the organization permission members: read, or list people in allowed_users", sourceOf(s.Repo))}
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		if err := g.replies.notAllowed(ctx, a.gh, a.repo, a.number, a.isPR, a.requester, a.deliveryID); err != nil {
			return nil, err
		}
		return &refusal{outcome: outcome.NotAllowed, detail: fmt.Sprintf("@%s may not ask for work here (allowed_users, allowed_teams in %s).", a.requester, config.RepoFile)}, nil
	}
	scope := budget.Scope{Installation: a.installation, Repo: a.repo.String(), Job: a.job, JobLimit: budget.Amount{USD: s.Limits.MaxCostUSD}}
	var over *budget.ExceededError
	if err := g.budget.Check(ctx, scope, budget.Amount{}); errors.As(err, &over) {
		if err := g.replies.overBudget(ctx, a.gh, a.repo, a.number, a.requester, a.deliveryID, over); err != nil {
			return nil, err
		}
		return &refusal{outcome: outcome.OverBudget, detail: over.Message()}, nil
	} else if err != nil {
		return nil, err
	}
	return nil, nil
}

// permitted checks requester has write access on repo; when not, it
// refuses once per user per issue and reports false.
func (g *gate) permitted(ctx context.Context, gh gateGitHub, repo ghapp.Repo, number int, isPR bool, requester, deliveryID string) (bool, error) {
	perm, err := gh.Permission(ctx, repo, requester)
	if err != nil {
		return false, err
	}
	if perm.CanWrite() {
		return true, nil
	}
	return false, g.replies.refuse(ctx, gh, repo, number, isPR, requester, deliveryID)
}
