package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
)

// Templates of the replies to triggers the repository's settings turn away.
const (
	tmplNotAllowed = "not_allowed.md.tmpl"
	tmplOverBudget = "over_budget.md.tmpl"
)

// Outcomes of triggers the repository's settings turned away.
const (
	outcomeInvalidConfig = "invalid_config"
	outcomeNotAllowed    = "not_allowed"
	outcomeOverBudget    = "over_budget"
)

// admission is a trigger asking for work in a repository.
type admission struct {
	gh           GitHub
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
	outcome string
	// detail says why in words, for a status comment.
	detail string
}

// admit checks a trigger against the repository's settings s: the
// requester must pass allowed_users and allowed_teams, and no budget may be
// used up. When one fails it replies once and returns the refusal. The
// reply for a delivery is posted once, so a notice and its job may both
// call admit. A team check GitHub refuses (the App lacks the members: read
// permission) is a *repoConfigError.
func (w *Worker) admit(ctx context.Context, a admission, s repoSettings) (*refusal, error) {
	ok, err := s.Repo.MayTrigger(ctx, a.requester, a.gh)
	if ghapp.HTTPStatus(err) == http.StatusForbidden {
		return nil, &repoConfigError{Problems: fmt.Sprintf("%s: allowed_teams: the App may not read team memberships; grant it the organization permission members: read, or list people in allowed_users", sourceOf(s.Repo))}
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		if err := w.refuseNotAllowed(ctx, a); err != nil {
			return nil, err
		}
		return &refusal{outcome: outcomeNotAllowed, detail: fmt.Sprintf("@%s may not ask for work here (allowed_users, allowed_teams in %s).", a.requester, config.RepoFile)}, nil
	}
	scope := budget.Scope{Installation: a.installation, Repo: a.repo.String(), Job: a.job, JobLimit: budget.Amount{USD: s.Limits.MaxCostUSD}}
	var over *budget.ExceededError
	if err := w.opts.Budget.Check(ctx, scope, budget.Amount{}); errors.As(err, &over) {
		if err := w.replyOverBudget(ctx, a, over); err != nil {
			return nil, err
		}
		return &refusal{outcome: outcomeOverBudget, detail: over.Message()}, nil
	} else if err != nil {
		return nil, err
	}
	return nil, nil
}

// overBudgetPrefix keys the one over-budget reply of a delivery: its
// notice and its job may find the budget used up at the same time.
const overBudgetPrefix = "agentfix:overbudget:"

// replyOverBudget tells the requester which budget is used up and when it
// resets, once per delivery.
func (w *Worker) replyOverBudget(ctx context.Context, a admission, over *budget.ExceededError) error {
	key := overBudgetPrefix + a.deliveryID
	first, err := w.state.claimOnce(ctx, key, resultTTL)
	if err != nil || !first {
		return err
	}
	d := w.replyData(a.requester, a.deliveryID)
	d.Budget = over.Message()
	if err := w.reply(ctx, a.gh, a.repo, a.number, tmplOverBudget, d); err != nil {
		w.state.unclaim(ctx, key)
		return err
	}
	return nil
}

// refuseNotAllowed tells a requester the repository's configuration does
// not let them trigger the bot, once per user per issue (like the refusal
// of users without write access, with which it shares the key).
func (w *Worker) refuseNotAllowed(ctx context.Context, a admission) error {
	key := fmt.Sprintf("%s%s#%d:%s", refusedPrefix, strings.ToLower(a.repo.String()), a.number, strings.ToLower(a.requester))
	first, err := w.state.claimOnce(ctx, key, refusedTTL)
	if err != nil || !first {
		return err
	}
	d := w.replyData(a.requester, a.deliveryID)
	d.IsPR, d.ConfigFile = a.isPR, config.RepoFile
	if err := w.reply(ctx, a.gh, a.repo, a.number, tmplNotAllowed, d); err != nil {
		w.state.unclaim(ctx, key)
		return err
	}
	return nil
}

// gate checks a queued trigger against the repository's settings before
// its job starts: a requester allowed_users or allowed_teams leave out, or
// a used-up daily budget, gets a reply and its pending job is removed. An
// invalid configuration lets the job go on: it tells the requester in its
// status comment.
func (nt *notice) gate(ctx context.Context) (outcome string, refused bool, err error) {
	n := nt.n
	s, err := nt.w.loadRepoConfig(ctx, n.Installation, nt.repo)
	var bad *repoConfigError
	if errors.As(err, &bad) {
		return "", false, nil
	}
	if err != nil {
		return outcomeError, true, err
	}
	r, err := nt.w.admit(ctx, admission{gh: nt.gh, installation: n.Installation, repo: nt.repo, number: n.Number, isPR: n.IsPR,
		requester: n.Requester.Login, deliveryID: n.DeliveryID}, s)
	if errors.As(err, &bad) {
		return "", false, nil
	}
	if err != nil {
		return outcomeError, true, err
	}
	if r == nil {
		return "", false, nil
	}
	if err := nt.w.deletePending(ctx, n.AgentTaskID, n.DeliveryID); err != nil {
		nt.log.Warn("remove the job of a refused trigger", logattr.Err, err)
	}
	return r.outcome, true, nil
}

// applyRepo loads the repository's settings into the job and checks its
// trigger against them; number is where the job talks: the issue of a fix
// job, whose branch the settings name, or the pull request of a revise
// round (isPR), which keeps the branch it has. stop is set
// when the job ends here: an invalid configuration (told in the status
// comment), or a requester or budget the settings refuse (told in a
// reply). A job whose agent already ran (an earlier attempt saved its
// result) is not checked again: it publishes.
func (j *job) applyRepo(ctx context.Context, haveSaved bool, number int, isPR bool) (outcome string, stop bool, err error) {
	s, err := j.w.loadRepoConfig(ctx, j.p.Installation, j.repo)
	if err == nil {
		j.cfg = s
		if !isPR {
			j.branch = s.branch(j.p.Number)
		}
		if haveSaved {
			return "", false, nil
		}
		var r *refusal
		r, err = j.w.admit(ctx, admission{gh: j.gh, installation: j.p.Installation, repo: j.repo, number: number,
			isPR: isPR, requester: j.p.Requester.Login, deliveryID: j.p.DeliveryID, job: j.key}, s)
		if err == nil && r != nil {
			j.endQueuedStatus(ctx, r.outcome, r.detail)
			return r.outcome, true, skip(fmt.Errorf("trigger refused: %s", r.detail))
		}
	}
	var bad *repoConfigError
	switch {
	case err == nil:
		return "", false, nil
	case !errors.As(err, &bad):
		return outcomeError, true, err
	}
	ref, serr := j.w.ensureStatus(ctx, j.gh, j.repo, number, j.key, j.p.Requester.Login)
	if serr != nil {
		return outcomeError, true, serr
	}
	j.status = j.w.newStatusComment(j.gh, j.repo, ref, j.key, j.p.Requester.Login, j.log)
	_ = j.status.show(ctx, func(d *statusData) {
		d.Phase, d.Outcome, d.Problems = PhaseFailed, outcomeInvalidConfig, bad.Problems
		d.Detail = fmt.Sprintf("the repository's configuration cannot be used. Fix %s on the default branch and ask again.", config.RepoFile)
	}, true)
	return outcomeInvalidConfig, true, skip(bad)
}

// endQueuedStatus ends the status comment the notice posted ("queued")
// for a job its settings refused.
func (j *job) endQueuedStatus(ctx context.Context, outcome, detail string) {
	ref, ok, err := j.w.state.knownStatusComment(ctx, j.key)
	if err != nil || !ok {
		return
	}
	s := j.w.newStatusComment(j.gh, j.repo, ref, j.key, j.p.Requester.Login, j.log)
	_ = s.show(ctx, func(d *statusData) { d.Phase, d.Outcome, d.Detail = PhaseCancelled, outcome, detail }, true)
}
