package worker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/runs"
	"github.com/agentfix/agentfix/workspace"
)

// Outcomes of tasks: the outcome label of agentfix_jobs_total and, for
// agent jobs, the status of their run record.
const (
	outcomePROpened     = "pr_opened"
	outcomeDraftOpened  = "draft_opened"
	outcomePRUpdated    = "pr_updated"
	outcomeNoChanges    = "no_changes"
	outcomeRefused      = "workflows_refused"
	outcomeFailed       = "failed"
	outcomeCancelled    = "cancelled"
	outcomeUnauthorized = "unauthorized"
	outcomeClosed       = "closed"
	outcomeInterrupted  = "interrupted"
	outcomeError        = "error"
	outcomeInvalid      = "invalid"
)

// BranchPrefix starts the branch of an issue's pull request:
// agent-fix/issue-<N> (DESIGN.md §4).
const BranchPrefix = "agent-fix/issue-"

// job is one run of an agent task for one trigger (delivery): a fix of an
// issue, or a revise round on the bot's pull request (then p holds the
// issue the pull request fixes and the round's requester, trigger and
// instructions, and round is set).
type job struct {
	w       *Worker
	kind    string // jobs.TypeFix or jobs.TypeRevise
	p       jobs.FixIssue
	taskID  string
	key     string
	repo    ghapp.Repo
	gh      GitHub
	log     *slog.Logger
	branch  string
	started time.Time
	// thread is where the job talks: the issue (fix) or the pull request
	// (revise).
	thread int
	round  *round

	issue  ghapp.Issue
	status *statusComment
	rec    *runs.Run    // the run record, once the job has one
	cfg    repoSettings // the repository's settings (applyRepo)
}

// handleFix runs a fix task (DESIGN.md §4, §5): check the requester and the
// issue, find or create the status comment, continue the open bot PR of
// the issue if there is one, fetch the repository into the cache, run the
// agent in a sandbox on a fresh working copy, save its result, then
// publish it: commit, push, pull request, review request, check run, final
// comment. A retry finds the status comment, the saved result, the branch
// and the pull request of its earlier attempts and reuses them.
func (w *Worker) handleFix(ctx context.Context, t *asynq.Task) error {
	p, err := jobs.Decode[jobs.FixIssue](t.Payload())
	if err != nil {
		w.log.Error("fix task with a bad payload", logattr.Err, err)
		w.metrics.job(jobs.TypeFix, outcomeInvalid)
		return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	repo, err := ghapp.ParseRepo(p.Repo.FullName)
	if err == nil && p.Number <= 0 {
		err = fmt.Errorf("issue number %d is not positive", p.Number)
	}
	if err != nil {
		w.metrics.job(jobs.TypeFix, outcomeInvalid)
		return fmt.Errorf("fix task: %w: %w", err, asynq.SkipRetry)
	}
	taskID := jobs.FixTaskID(p.Repo.FullName, p.Number)
	log := w.log.With(logattr.Task, taskID, logattr.DeliveryID, p.DeliveryID, logattr.Repo, p.Repo.FullName,
		logattr.Issue, p.Number, logattr.InstallationID, p.Installation)
	gh, err := w.opts.GitHub.Installation(p.Installation)
	if err != nil {
		w.metrics.job(jobs.TypeFix, outcomeInvalid)
		return fmt.Errorf("fix task: %w: %w", err, asynq.SkipRetry)
	}
	j := &job{
		w: w, kind: jobs.TypeFix, p: p, taskID: taskID, key: jobKey(taskID, p.DeliveryID), repo: repo, gh: gh, log: log,
		branch: BranchPrefix + fmt.Sprint(p.Number), started: w.now(), thread: p.Number,
	}
	_, err = w.runJob(ctx, j, j.run)
	return err
}

// runJob runs job j with run under the job's lock, reports a last attempt
// that failed, counts and logs the outcome, and returns it with the error
// for asynq.
func (w *Worker) runJob(ctx context.Context, j *job, run func(context.Context) (string, error)) (string, error) {
	unlock, err := w.state.lockJob(ctx, j.key)
	if err != nil {
		w.metrics.job(j.kind, outcomeError)
		return outcomeError, err
	}
	defer unlock()
	outcome, err := run(ctx)
	if err != nil && !errors.Is(err, asynq.SkipRetry) && outcome != outcomeInterrupted && lastAttempt(ctx) {
		outcome = j.giveUp(ctx, err)
	}
	w.metrics.job(j.kind, outcome)
	if err != nil && !errors.Is(err, asynq.SkipRetry) {
		j.log.Warn(j.kind+" job failed; it will be retried", logattr.Outcome, outcome, logattr.Err, err)
	} else {
		j.log.Info(j.kind+" job ended", logattr.Outcome, outcome, logattr.Err, err)
	}
	return outcome, err
}

// lastAttempt reports whether asynq will not retry the task after this
// attempt fails.
func lastAttempt(ctx context.Context) bool {
	n, ok1 := asynq.GetRetryCount(ctx)
	limit, ok2 := asynq.GetMaxRetry(ctx)
	return ok1 && ok2 && n >= limit
}

// skip marks err as final: asynq archives the task instead of retrying it.
func skip(err error) error { return fmt.Errorf("%w: %w", err, asynq.SkipRetry) }

// run is the job; it returns the outcome and the error for asynq.
func (j *job) run(ctx context.Context) (string, error) {
	w := j.w
	// A stopped job's task comes back once more (asynq retries what a
	// cancelled context ended); it ends here.
	if m, ok, err := w.state.cancelFor(ctx, j.taskID, j.p.DeliveryID); err != nil {
		return outcomeError, err
	} else if ok {
		return outcomeCancelled, skip(fmt.Errorf("job was stopped (%s)", m.Reason))
	}
	saved, haveSaved, err := w.state.loadResult(ctx, j.key)
	if err != nil {
		return outcomeError, err
	}
	if haveSaved && saved.Done != nil {
		return saved.Done.Outcome, nil // reported by an earlier attempt
	}
	perm, err := j.gh.Permission(ctx, j.repo, j.p.Requester.Login)
	if err != nil {
		return outcomeError, err
	}
	if !perm.CanWrite() {
		if err := w.refuse(ctx, j.gh, j.repo, j.p.Number, false, j.p.Requester.Login, j.p.DeliveryID); err != nil {
			return outcomeError, err
		}
		return outcomeUnauthorized, skip(fmt.Errorf("%s has %s permission, not write", j.p.Requester.Login, perm))
	}
	if j.issue, err = j.gh.Issue(ctx, j.repo, j.p.Number); err != nil {
		if errors.Is(err, ghapp.ErrNotFound) {
			return outcomeInvalid, skip(err)
		}
		return outcomeError, err
	}
	switch {
	case j.issue.IsPullRequest:
		return outcomeInvalid, skip(fmt.Errorf("#%d is a pull request, not an issue", j.p.Number))
	case j.issue.State != "open" || j.issue.Locked:
		if err := j.replyClosed(ctx); err != nil {
			return outcomeError, err
		}
		j.endWaitingStatus(ctx)
		return outcomeClosed, skip(fmt.Errorf("issue is %s (locked %v)", j.issue.State, j.issue.Locked))
	}
	if outcome, stop, err := j.applyRepo(ctx, haveSaved, j.p.Number, false); stop {
		return outcome, err
	}
	ref, err := w.ensureStatus(ctx, j.gh, j.repo, j.p.Number, j.key, j.p.Requester.Login)
	if err != nil {
		return outcomeError, err
	}
	j.status = w.newStatusComment(j.gh, j.repo, ref, j.key, j.p.Requester.Login, j.log)
	if !haveSaved {
		// An open bot PR turns the trigger into a round on that PR, run by
		// its revise task: one round per PR at a time.
		if pr, open, err := j.gh.FindPR(ctx, j.repo, j.branch); err != nil {
			return outcomeError, err
		} else if open {
			return j.moveToPR(ctx, pr)
		}
	}
	_ = j.status.show(ctx, func(d *statusData) { d.Phase, d.Branch, d.Notes = PhaseCloning, j.branch, j.cfg.notes() }, true)
	return j.work(ctx, saved, haveSaved)
}

// target is where a job starts: the open bot PR it continues (if any),
// the repository, and the base commit in the cache.
type target struct {
	pr    ghapp.PullRequest
	hasPR bool
	info  ghapp.Repository
	base  string
	// branches are the repository's branches in the cache after the fetch.
	branches map[string]string
}

// work fetches, makes the working copy, runs the agent (unless an earlier
// attempt saved its result) and publishes. A cancellation before the agent
// ran (a stop while cloning, a shutdown) is reported like one during it.
func (j *job) work(ctx context.Context, saved savedResult, haveSaved bool) (string, error) {
	outcome, err := j.workOn(ctx, saved, haveSaved)
	if err != nil && outcome == outcomeError && ctx.Err() != nil {
		return j.stopped(ctx, agent.Result{Status: agent.Cancelled, Reason: context.Cause(ctx).Error()})
	}
	return outcome, err
}

func (j *job) workOn(ctx context.Context, saved savedResult, haveSaved bool) (string, error) {
	if j.cfg.Model == "" { // the job did not load its repository's settings
		j.cfg = j.w.operatorSettings()
	}
	t, err := j.target(ctx, saved, haveSaved)
	if err != nil {
		return outcomeError, err
	}
	if j.rec, err = j.openRun(ctx, saved, haveSaved); err != nil {
		return outcomeError, err
	}
	defer j.rec.Close()
	_ = j.status.show(ctx, func(d *statusData) { d.RunID = j.rec.ID() }, true)
	if j.round != nil {
		if err := j.startRound(ctx, t, !haveSaved); err != nil {
			return outcomeError, err
		}
	}
	wt, err := j.checkout(ctx, t.base, j.rec.ID())
	if err != nil {
		return outcomeError, err
	}
	defer func() {
		if err := wt.Remove(); err != nil {
			j.log.Warn("remove working copy", logattr.Err, err)
		}
	}()
	if haveSaved {
		if err := workspace.ApplyPatch(ctx, wt, saved.Result.Patch); err != nil {
			return outcomeError, err
		}
		return j.publish(ctx, wt, saved, t)
	}
	ar := &agentRun{j: j, wt: wt, run: j.rec}
	res, err := ar.execute(ctx, j.task())
	if ctx.Err() != nil || (err == nil && res.Status == agent.Cancelled) {
		if err != nil {
			res = agent.Result{RunID: j.rec.ID(), Status: agent.Cancelled, Reason: err.Error()}
		}
		return j.stopped(ctx, res)
	}
	var se *setupError
	if errors.As(err, &se) {
		return j.setupFailed(ctx, se)
	}
	if err != nil {
		j.log.Error("the agent could not start", logattr.Err, err)
		failed := savedResult{RunID: j.rec.ID(), Result: agent.Result{RunID: j.rec.ID(), Status: agent.Error, Reason: err.Error()}}
		return j.report(ctx, failed, outcomeFailed, "the agent could not start.", "")
	}
	saved = savedResult{RunID: j.rec.ID(), Base: wt.Base(), Result: res, Model: j.cfg.Model, Review: ar.reviewRounds()}
	if t.hasPR {
		saved.PR = t.pr.Number
	}
	if err := j.w.state.saveResult(context.WithoutCancel(ctx), j.key, saved); err != nil {
		j.log.Error("save the agent's result; a retry would run the agent again", logattr.Err, err)
	}
	return j.publish(ctx, wt, saved, t)
}

// target finds the open bot PR of the issue (or the one the saved result
// continued), the repository, and fetches it into the cache with a token
// scoped to it.
func (j *job) target(ctx context.Context, saved savedResult, haveSaved bool) (target, error) {
	var t target
	var err error
	switch {
	case j.round != nil:
		t.pr, t.hasPR = j.round.pr, true
	case haveSaved && saved.PR != 0:
		if t.pr, err = j.gh.PR(ctx, j.repo, saved.PR); err != nil {
			return t, err
		}
		t.hasPR = t.pr.State == "open"
	case !haveSaved:
		if t.pr, t.hasPR, err = j.gh.FindPR(ctx, j.repo, j.branch); err != nil {
			return t, err
		}
	}
	if t.info, err = j.gh.GetRepository(ctx, j.repo); err != nil {
		return t, err
	}
	if t.info.CloneURL == "" {
		t.info.CloneURL = j.p.Repo.CloneURL
	}
	tok, err := j.w.opts.GitHub.Token(ctx, j.p.Installation, j.repo)
	if err != nil {
		return t, err
	}
	fetched, err := j.w.opts.Cache.Fetch(ctx, j.repo.String(), workspace.Remote{URL: t.info.CloneURL, Token: tok.Value})
	if err != nil {
		return t, err
	}
	t.branches = fetched.Branches
	if haveSaved {
		t.base = saved.Base
		return t, nil
	}
	from := t.info.DefaultBranch
	if t.hasPR {
		from = j.branch
	}
	if t.base = fetched.Branches[from]; t.base == "" {
		return t, fmt.Errorf("branch %s of %s is not on the git server", from, j.repo)
	}
	return t, nil
}

// task is what the agent works on.
func (j *job) task() agent.Task {
	return agent.Task{
		Repo: j.p.Repo.FullName, Issue: j.p.Number,
		Title: j.issue.Title, Body: j.issue.Body, Instructions: j.p.Instructions, Notes: j.cfg.Repo.Instructions,
		Revision: j.revision(),
	}
}

// openRun starts the run record, or reopens the one of the attempt whose
// result was saved.
func (j *job) openRun(ctx context.Context, saved savedResult, haveSaved bool) (*runs.Run, error) {
	m := runs.Meta{
		Kind: j.kind, TaskID: j.taskID, DeliveryID: j.p.DeliveryID, Repo: j.p.Repo.FullName,
		Number: j.thread, Requester: j.p.Requester.Login, Model: j.cfg.Model,
	}
	if haveSaved {
		return j.w.opts.Runs.Open(ctx, saved.RunID, m)
	}
	return j.w.opts.Runs.Create(ctx, m)
}

// checkout makes the job's working copy in AGENTFIX_DATA_DIR/jobs/<run_id>
// (with the sandbox cache next to it), replacing what a crashed attempt of
// the same run left there.
func (j *job) checkout(ctx context.Context, base, runID string) (*workspace.WorkTree, error) {
	dir := filepath.Join(j.w.jobsDir, runID)
	if err := removeTree(dir); err != nil {
		return nil, fmt.Errorf("clear job directory: %w", err)
	}
	if err := os.MkdirAll(j.w.jobsDir, 0o700); err != nil {
		return nil, err
	}
	return j.w.opts.Cache.Checkout(ctx, j.repo.String(), base, workspace.WorkTreeOptions{
		Dir: dir, Branch: j.branch, Logger: j.log,
	})
}

// removeTree deletes dir, including directories a sandbox made read-only.
func removeTree(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
