package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
)

// BranchPrefix starts the branch of an issue's pull request:
// agent-fix/issue-<N> (DESIGN.md §4).
const BranchPrefix = "agent-fix/issue-"

// fix is one fix job: an issue becomes a pull request. Its steps, in
// order: resume what an earlier attempt did; admit the requester, the
// issue and the repository's settings (gate); post the status comment;
// hand the work to a round when the issue has an open bot pull request;
// then the shared pipeline — workspace, agent session, publish — with the
// fix's own start (the default branch), delivery (open the pull request)
// and final word (a comment on the issue).
type fix struct {
	w *Worker
	j job
}

// handleFix runs a fix task (DESIGN.md §4, §5).
func (w *Worker) handleFix(ctx context.Context, t *asynq.Task) error {
	p, err := jobs.Decode[jobs.FixIssue](t.Payload())
	var repo ghapp.Repo
	if err == nil {
		repo, err = ghapp.ParseRepo(p.Repo.FullName)
	}
	if err == nil && p.Number <= 0 {
		err = fmt.Errorf("issue number %d is not positive", p.Number)
	}
	var gh GitHub
	if err == nil {
		gh, err = w.opts.GitHub.Installation(p.Installation)
	}
	if err != nil {
		w.log.Error("fix task that cannot run", logattr.Err, err)
		w.metrics.job(jobs.TypeFix, outcome.Invalid)
		return skip(fmt.Errorf("fix task: %w", err))
	}
	taskID := jobs.FixTaskID(p.Repo.FullName, p.Number)
	f := &fix{w: w, j: job{
		kind: jobs.TypeFix, taskID: taskID, key: store.JobKey(taskID, p.DeliveryID), delivery: p.DeliveryID,
		install: p.Installation, repo: repo, clone: p.Repo, requester: p.Requester, trigger: p.Trigger,
		instructions: p.Instructions, number: p.Number, thread: p.Number, gh: gh, started: w.now(),
		branch: BranchPrefix + fmt.Sprint(p.Number),
		log: w.log.With(logattr.Task, taskID, logattr.DeliveryID, p.DeliveryID, logattr.Repo, p.Repo.FullName,
			logattr.Issue, p.Number, logattr.InstallationID, p.Installation),
	}}
	return w.runJob(ctx, f)
}

func (f *fix) job() *job { return &f.j }

func (f *fix) run(ctx context.Context) (outcome.Outcome, error) {
	w, j := f.w, &f.j
	if o, err := w.resume(ctx, j); o != "" {
		return o, err
	}
	if ok, err := w.gate.permitted(ctx, j.gh, j.repo, j.number, false, j.requester.Login, j.delivery); err != nil {
		return outcome.Error, err
	} else if !ok {
		return outcome.Unauthorized, fmt.Errorf("%s has no write access", j.requester.Login)
	}
	if o, err := f.readIssue(ctx); o != "" {
		return o, err
	}
	if o, err := w.settle(ctx, j); o != "" {
		return o, err
	}
	j.branch = j.cfg.branch(j.number)
	if err := w.statuses.open(ctx, j); err != nil {
		return outcome.Error, err
	}
	if !j.resumed {
		// An open bot PR turns the trigger into a round on that PR, run by
		// its revise task: one round per PR at a time.
		if pr, open, err := j.gh.FindPR(ctx, j.repo, j.branch); err != nil {
			return outcome.Error, err
		} else if open {
			return w.moveToPR(ctx, j, pr)
		}
	}
	j.show(ctx, func(d *report.Status) { d.Phase, d.Branch, d.Notes = report.PhaseCloning, j.branch, j.cfg.notes() })
	return w.work(ctx, f)
}

// readIssue reads the issue: a pull request, a closed or a locked issue
// ends the job here (a non-empty outcome).
func (f *fix) readIssue(ctx context.Context) (outcome.Outcome, error) {
	w, j := f.w, &f.j
	issue, err := j.gh.Issue(ctx, j.repo, j.number)
	if errors.Is(err, ghapp.ErrNotFound) {
		return outcome.Invalid, err
	}
	if err != nil {
		return outcome.Error, err
	}
	j.issue = issue
	switch {
	case issue.IsPullRequest:
		return outcome.Invalid, fmt.Errorf("#%d is a pull request, not an issue", j.number)
	case issue.State == "open" && !issue.Locked:
		return "", nil
	}
	if err := f.replyClosed(ctx); err != nil {
		return outcome.Error, err
	}
	detail := "the issue is closed."
	if issue.Locked {
		detail = "the issue is locked."
	}
	// The notice's "queued" comment, or one posted now when the job got
	// here first, so a notice that comes later finds a final status. A
	// locked issue may refuse the comment; that is left at that.
	if err := w.statuses.open(ctx, j); err != nil {
		j.log.Info("no status comment to end", logattr.Err, err)
	} else {
		j.show(ctx, func(d *report.Status) { d.Phase, d.Outcome, d.Detail = report.PhaseCancelled, outcome.Closed, detail })
	}
	return outcome.Closed, fmt.Errorf("issue is %s (locked %v)", issue.State, issue.Locked)
}

// replyClosed tells the requester the issue is closed or locked (a locked
// issue may refuse the comment; that is logged, not retried).
func (f *fix) replyClosed(ctx context.Context) error {
	j := &f.j
	d := f.w.replies.data(j.requester.Login, j.delivery)
	d.Locked = j.issue.Locked
	err := f.w.replies.post(ctx, j.gh, j.repo, j.number, report.ReplyClosed, d)
	if err != nil && j.issue.Locked && ghapp.HTTPStatus(err) == 403 {
		j.log.Info("the issue is locked; no reply", logattr.Err, err)
		return nil
	}
	return err
}

// base: a fix starts from the default branch.
func (f *fix) base(fe fetched) (string, error) { return fe.branchHead(&f.j, fe.info.DefaultBranch) }

// start: a fix needs nothing more.
func (f *fix) start(context.Context, fetched, string, bool) error { return nil }

func (f *fix) task() agent.Task {
	j := &f.j
	return agent.Task{Repo: j.repo.String(), Issue: j.number, Title: j.issue.Title, Body: j.issue.Body,
		Instructions: j.instructions, Notes: j.cfg.Repo.Instructions}
}

// forcePush: no bot pull request is open (the job moves to it otherwise),
// so the fix may force its own branch.
func (f *fix) forcePush() bool { return true }

// deliver opens the issue's pull request: a draft when the change is
// incomplete or something keeps it from review (draftReason).
func (f *fix) deliver(ctx context.Context, fe fetched, _ string) (delivered, error) {
	j := &f.j
	why := draftReason(j.saved.Result, j.saved.Review, j.cfg.Repo, taskText(j))
	pr, err := f.w.publish.openPR(ctx, j, fe.info, why != "")
	if err != nil {
		return delivered{}, err
	}
	d := delivered{outcome: outcome.PROpened, pr: pr.Number, url: pr.HTMLURL, draft: why != "", detail: why}
	if j.saved.Result.Status == agent.Autosubmitted {
		d.outcome = outcome.DraftOpened
	}
	return d, nil
}

// final posts the job's final comment on the issue once, mentioning the
// requester so they are notified.
func (f *fix) final(ctx context.Context, d report.Final, _ outcome.Outcome) error {
	j := &f.j
	d = f.w.finalData(j, d)
	d.Marker = ghapp.Marker("final " + j.key)
	body, err := f.w.texts.Final(d)
	if err != nil {
		return err
	}
	_, err = report.PostOnce(ctx, j.gh, j.repo, j.thread, d.Marker, body)
	return err
}

// ended completes the job's check runs.
func (f *fix) ended(ctx context.Context, o outcome.Outcome, pushed string, res agent.Result) {
	f.w.checks.finish(ctx, &f.j, o, pushed, res)
}

// failed reports the job's last failed attempt.
func (f *fix) failed(ctx context.Context, cause error) outcome.Outcome {
	n, _ := asynq.GetRetryCount(ctx)
	return f.w.giveUp(ctx, f, cause, n+1)
}

var _ stage = (*fix)(nil)
