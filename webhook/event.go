package webhook

import (
	"fmt"

	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
)

// eventHandler handles the deliveries of one event type.
type eventHandler interface {
	// decide decodes the JSON payload of the handler's event — only the
	// fields routing needs — and turns it into what the delivery asks for.
	// It fails only on malformed JSON or a field of the wrong type, and does
	// no I/O.
	decide(d delivery, body []byte) (decision, error)
}

// delivery is what the headers say about one delivery.
type delivery struct {
	id    string // X-GitHub-Delivery
	event string // X-GitHub-Event
}

// decision is what one delivery asks for: nothing (ignore, with a reason),
// or exactly one of the submissions.
type decision struct {
	ignore string
	fix    *jobs.FixIssue
	revise *jobs.RevisePR
	notice *jobs.Notice
	cancel *jobs.Cancel
	// checks and baseMoved ask the worker to look at pull requests for an
	// automatic round (check_suite.go, push.go).
	checks    *jobs.ChecksDone
	baseMoved *jobs.BaseMoved
}

// logAttrs returns the log attributes of the decision's target.
func (d decision) logAttrs() []any {
	var inst int64
	var repo string
	var number int
	switch {
	case d.fix != nil:
		inst, repo, number = d.fix.Installation, d.fix.Repo.FullName, d.fix.Number
	case d.revise != nil:
		inst, repo, number = d.revise.Installation, d.revise.Repo.FullName, d.revise.Number
	case d.notice != nil:
		inst, repo, number = d.notice.Installation, d.notice.Repo.FullName, d.notice.Number
	case d.cancel != nil:
		inst = d.cancel.Installation
		if len(d.cancel.Repos) == 1 {
			repo, number = d.cancel.Repos[0].FullName, d.cancel.Number
		}
	case d.checks != nil:
		inst, repo = d.checks.Installation, d.checks.Repo.FullName
		if len(d.checks.PRs) == 1 {
			number = d.checks.PRs[0]
		}
	case d.baseMoved != nil:
		inst, repo = d.baseMoved.Installation, d.baseMoved.Repo.FullName
	default:
		return nil
	}
	attrs := []any{logattr.InstallationID, inst}
	if repo != "" {
		attrs = append(attrs, logattr.Repo, repo)
	}
	if number != 0 {
		attrs = append(attrs, logattr.Issue, number)
	}
	return attrs
}

func ignored(format string, args ...any) decision {
	return decision{ignore: fmt.Sprintf(format, args...)}
}

// rules are the operator's settings that routing depends on.
type rules struct {
	appID        int64
	triggerLabel string
	command      string
}

// handlers maps event names to their handlers.
func handlers(r rules) map[string]eventHandler {
	return map[string]eventHandler{
		"issues":                      &Issues{rules: r},
		"issue_comment":               &IssueComment{rules: r},
		"pull_request_review":         &PullRequestReview{rules: r},
		"pull_request_review_comment": &PullRequestReviewComment{rules: r},
		"check_suite":                 &CheckSuite{rules: r},
		"check_run":                   &CheckRun{rules: r},
		"push":                        &Push{},
		"installation":                &Installation{},
		"installation_repositories":   &InstallationRepositories{},
		"ping":                        &Ping{},
	}
}
