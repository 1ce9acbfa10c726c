package worker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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

// job is one run of a fix task for one trigger (delivery).
type job struct {
	w       *Worker
	p       jobs.FixIssue
	taskID  string
	key     string
	repo    ghapp.Repo
	gh      GitHub
	log     *slog.Logger
	branch  string
	started time.Time

	issue  ghapp.Issue
	status *statusComment
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
		w: w, p: p, taskID: taskID, key: jobKey(taskID, p.DeliveryID), repo: repo, gh: gh, log: log,
		branch: BranchPrefix + fmt.Sprint(p.Number), started: w.now(),
	}
	unlock, err := w.state.lockJob(ctx, j.key)
	if err != nil {
		w.metrics.job(jobs.TypeFix, outcomeError)
		return err
	}
	defer unlock()
	outcome, err := j.run(ctx)
	if err != nil && !errors.Is(err, asynq.SkipRetry) && outcome != outcomeInterrupted && lastAttempt(ctx) {
		outcome = j.giveUp(ctx, err)
	}
	w.metrics.job(jobs.TypeFix, outcome)
	if err != nil && !errors.Is(err, asynq.SkipRetry) {
		log.Warn("fix job failed; it will be retried", logattr.Outcome, outcome, logattr.Err, err)
	} else {
		log.Info("fix job ended", logattr.Outcome, outcome, logattr.Err, err)
	}
	return err
}

// lastAttempt reports whether asynq will not retry the task after this
// attempt fails.
func lastAttempt(ctx context.Context) bool {
	n, ok1 := asynq.GetRetryCount(ctx)
	limit, ok2 := asynq.GetMaxRetry(ctx)
	return ok1 && ok2 && n >= limit
}

// giveUp reports a job whose last attempt failed, so its status comment
// does not stay in a phase forever. The error itself is in the logs, not
// on GitHub.
func (j *job) giveUp(ctx context.Context, cause error) string {
	ctx, cancel := j.w.reportCtx(ctx)
	defer cancel()
	n, _ := asynq.GetRetryCount(ctx)
	detail := fmt.Sprintf("an internal error stopped the job after %d attempts; the worker's logs have the details.", n+1)
	j.log.Error("fix job failed for good", logattr.Err, cause)
	if j.status == nil {
		return outcomeFailed
	}
	_ = j.status.show(ctx, func(d *statusData) { d.Phase, d.Outcome, d.Detail = PhaseFailed, outcomeFailed, detail }, true)
	if err := j.finalComment(ctx, finalData{Outcome: outcomeFailed, Detail: detail}, j.status.snapshot().RunID, agent.Result{}); err != nil {
		j.log.Warn("post final comment", logattr.Err, err)
	}
	return outcomeFailed
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
	ref, err := w.ensureStatus(ctx, j.gh, j.repo, j.p.Number, j.key, j.p.Requester.Login)
	if err != nil {
		return outcomeError, err
	}
	j.status = w.newStatusComment(j.gh, j.repo, ref, j.key, j.p.Requester.Login, j.log)
	_ = j.status.show(ctx, func(d *statusData) { d.Phase, d.Branch = PhaseCloning, j.branch }, true)
	return j.work(ctx, saved, haveSaved)
}

// work fetches, makes the working copy, runs the agent (unless an earlier
// attempt saved its result) and publishes.
func (j *job) work(ctx context.Context, saved savedResult, haveSaved bool) (string, error) {
	w := j.w
	var pr ghapp.PullRequest
	var hasPR bool
	var err error
	if haveSaved && saved.PR != 0 {
		if pr, err = j.gh.PR(ctx, j.repo, saved.PR); err != nil {
			return outcomeError, err
		}
		hasPR = pr.State == "open"
	} else if !haveSaved {
		if pr, hasPR, err = j.gh.FindPR(ctx, j.repo, j.branch); err != nil {
			return outcomeError, err
		}
	}
	info, err := j.gh.GetRepository(ctx, j.repo)
	if err != nil {
		return outcomeError, err
	}
	if info.CloneURL == "" {
		info.CloneURL = j.p.Repo.CloneURL
	}
	tok, err := w.opts.GitHub.Token(ctx, j.p.Installation, j.repo)
	if err != nil {
		return outcomeError, err
	}
	fetched, err := w.opts.Cache.Fetch(ctx, j.repo.String(), workspace.Remote{URL: info.CloneURL, Token: tok.Value})
	if err != nil {
		return outcomeError, err
	}
	base := saved.Base
	if !haveSaved {
		from := info.DefaultBranch
		if hasPR {
			from = j.branch
		}
		if base = fetched.Branches[from]; base == "" {
			return outcomeError, fmt.Errorf("branch %s of %s is not on the git server", from, j.repo)
		}
	}
	run, err := j.openRun(ctx, saved, haveSaved)
	if err != nil {
		return outcomeError, err
	}
	defer run.Close()
	_ = j.status.show(ctx, func(d *statusData) { d.RunID = run.ID() }, true)
	wt, err := j.checkout(ctx, base, run.ID())
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
	} else {
		if hasPR {
			saved.PR = pr.Number
		}
		ar := &agentRun{j: j, wt: wt, run: run}
		res, err := ar.execute(ctx, j.task())
		if err != nil {
			if ctx.Err() != nil {
				return j.stopped(ctx, run, agent.Result{RunID: run.ID(), Status: agent.Cancelled})
			}
			return j.report(ctx, run, savedResult{RunID: run.ID(), Result: agent.Result{RunID: run.ID(), Status: agent.Error, Reason: err.Error()}},
				outcomeFailed, "the agent could not start.", "")
		}
		if ctx.Err() != nil || res.Status == agent.Cancelled {
			return j.stopped(ctx, run, res)
		}
		saved = savedResult{RunID: run.ID(), Base: wt.Base(), Result: res, Model: w.opts.Config.Model,
			Review: ar.reviewRounds(), PR: saved.PR}
		if err := w.state.saveResult(context.WithoutCancel(ctx), j.key, saved); err != nil {
			j.log.Error("save the agent's result; a retry would run the agent again", logattr.Err, err)
		}
	}
	return j.publish(ctx, wt, run, saved, pr, hasPR, info)
}

// task is what the agent works on.
func (j *job) task() agent.Task {
	return agent.Task{
		Repo: j.p.Repo.FullName, Issue: j.p.Number,
		Title: j.issue.Title, Body: j.issue.Body, Instructions: j.p.Instructions,
	}
}

// openRun starts the run record, or reopens the one of the attempt whose
// result was saved.
func (j *job) openRun(ctx context.Context, saved savedResult, haveSaved bool) (*runs.Run, error) {
	m := runs.Meta{
		Kind: jobs.TypeFix, TaskID: j.taskID, DeliveryID: j.p.DeliveryID, Repo: j.p.Repo.FullName,
		Number: j.p.Number, Requester: j.p.Requester.Login, Model: j.w.opts.Config.Model,
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

// stopped ends a job whose agent run was cancelled: with its cancel marker
// (stop, closed issue, removed installation) it reports and ends for good;
// without one the worker is shutting down, so it says so and returns an
// error for asynq to retry the task.
func (j *job) stopped(ctx context.Context, run *runs.Run, res agent.Result) (string, error) {
	rctx, cancel := j.w.reportCtx(ctx)
	defer cancel()
	m, marked, err := j.w.state.cancelFor(rctx, j.taskID, j.p.DeliveryID)
	if err != nil {
		j.log.Warn("read cancel marker", logattr.Err, err)
	}
	if !marked {
		j.record(rctx, run, res, func(mt *runs.Meta) { mt.Status = outcomeInterrupted })
		_ = j.status.show(rctx, func(d *statusData) { d.Phase = PhaseInterrupted }, true)
		cause := context.Cause(ctx)
		if cause == nil {
			cause = errors.New(res.Reason)
		}
		return outcomeInterrupted, fmt.Errorf("job interrupted: %w", cause)
	}
	return j.cancelled(rctx, run, m, res)
}

// cancelled reports a job its marker stopped.
func (j *job) cancelled(ctx context.Context, run *runs.Run, m cancelMarker, res agent.Result) (string, error) {
	detail := cancelDetail(m)
	_ = j.status.show(ctx, func(d *statusData) {
		d.Phase, d.StoppedBy, d.Detail, d.Outcome = PhaseCancelled, m.By, detail, outcomeCancelled
	}, true)
	if m.Reason == reasonStop {
		if err := j.finalComment(ctx, finalData{Outcome: outcomeCancelled, StoppedBy: m.By}, run.ID(), res); err != nil {
			j.log.Warn("post final comment", logattr.Err, err)
		}
	}
	j.record(ctx, run, res, func(mt *runs.Meta) { mt.Status = outcomeCancelled })
	_ = j.w.state.saveResult(ctx, j.key, savedResult{RunID: run.ID(), Result: res, Done: &publishedResult{Outcome: outcomeCancelled}})
	return outcomeCancelled, skip(fmt.Errorf("job stopped: %s", detail))
}

// cancelDetail says in words why a job was stopped.
func cancelDetail(m cancelMarker) string {
	switch m.Reason {
	case string(jobs.CancelIssueClosed):
		return "the issue was closed."
	case string(jobs.CancelInstallationDeleted), string(jobs.CancelInstallationSuspended), string(jobs.CancelRepositoriesRemoved):
		return "the App was removed from this repository."
	}
	return ""
}

// reportCtx is the context of reports to GitHub after the agent ran: they
// go on when the job's context is cancelled, for at most GitHubTimeout.
func (w *Worker) reportCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), w.opts.GitHubTimeout)
}

// record writes the agent's result into the run record and mirrors it.
func (j *job) record(ctx context.Context, run *runs.Run, res agent.Result, edit func(*runs.Meta)) {
	err := run.Update(func(m *runs.Meta) {
		m.ExitStatus, m.ExitReason, m.Steps, m.CostUSD = string(res.Status), res.Reason, res.Steps, res.CostUSD
		m.Tokens = runs.Tokens{Input: res.Usage.InputTokens, Output: res.Usage.OutputTokens,
			CacheRead: res.Usage.CacheReadTokens, CacheWrite: res.Usage.CacheWriteTokens}
		m.Ended = j.w.now()
		m.Duration = m.Ended.Sub(m.Started)
		edit(m)
	})
	if err == nil && res.Patch != "" {
		err = run.SetPatch(res.Patch)
	}
	if err == nil {
		err = run.Save(ctx)
	}
	if err != nil {
		j.log.Warn("write run record", logattr.Err, err)
	}
}

// endWaitingStatus ends the status comment the notice posted ("queued")
// for a job that stops before it starts working.
func (j *job) endWaitingStatus(ctx context.Context) {
	ref, ok, err := j.w.state.knownStatusComment(ctx, j.key)
	if err != nil || !ok {
		return
	}
	detail := "the issue is closed."
	if j.issue.Locked {
		detail = "the issue is locked."
	}
	s := j.w.newStatusComment(j.gh, j.repo, ref, j.key, j.p.Requester.Login, j.log)
	_ = s.show(ctx, func(d *statusData) { d.Phase, d.Outcome, d.Detail = PhaseCancelled, outcomeClosed, detail }, true)
}

// replyClosed tells the requester the issue is closed or locked (a locked
// issue may refuse the comment; that is logged, not retried).
func (j *job) replyClosed(ctx context.Context) error {
	d := j.w.replyData(j.p.Requester.Login, j.p.DeliveryID)
	d.Locked = j.issue.Locked
	err := j.w.reply(ctx, j.gh, j.repo, j.p.Number, tmplClosed, d)
	if err != nil && j.issue.Locked && ghapp.HTTPStatus(err) == 403 {
		j.log.Info("the issue is locked; no reply", logattr.Err, err)
		return nil
	}
	return err
}

// requesterIdentity is the requester as a commit co-author, with GitHub's
// noreply address so the commit is linked to their account.
func (j *job) requesterIdentity() workspace.Identity {
	login := j.p.Requester.Login
	email := login + "@users.noreply.github.com"
	if j.p.Requester.ID > 0 {
		email = fmt.Sprintf("%d+%s@users.noreply.github.com", j.p.Requester.ID, login)
	}
	return workspace.Identity{Name: login, Email: email}
}

// commitAuthor is the bot's commit identity.
func (w *Worker) commitAuthor(ctx context.Context) (workspace.Identity, error) {
	if w.opts.CommitAuthor != (workspace.Identity{}) {
		return w.opts.CommitAuthor, nil
	}
	id, err := w.opts.GitHub.Identity(ctx)
	if err != nil {
		return workspace.Identity{}, fmt.Errorf("commit author: %w", err)
	}
	return workspace.Identity{Name: id.BotLogin, Email: strings.ToLower(id.BotLogin) + "@users.noreply.github.com"}, nil
}
