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
	"github.com/agentfix/agentfix/runs"
)

// giveUp reports a job whose last attempt failed, so its status comment
// does not stay in a phase forever. The error itself is in the logs, not
// on GitHub.
func (j *job) giveUp(ctx context.Context, cause error) string {
	ctx, cancel := j.w.reportCtx(ctx)
	defer cancel()
	n, _ := asynq.GetRetryCount(ctx)
	detail := fmt.Sprintf("an internal error stopped the job after %d attempts; the worker's logs have the details.", n+1)
	j.log.Error(j.kind+" job failed for good", logattr.Err, cause)
	if j.status == nil {
		return outcomeFailed
	}
	_ = j.status.show(ctx, func(d *statusData) { d.Phase, d.Outcome, d.Detail = PhaseFailed, outcomeFailed, detail }, true)
	j.endRound(ctx, outcomeFailed, "", agent.Result{})
	if err := j.finalComment(ctx, finalData{Outcome: outcomeFailed, Detail: detail}, agent.Result{}); err != nil {
		j.log.Warn("post final comment", logattr.Err, err)
	}
	return outcomeFailed
}

// stopped ends a job whose agent run was cancelled: with its cancel marker
// (stop, closed issue, removed installation) it reports and ends for good;
// without one the worker is shutting down, so it says so and returns an
// error for asynq to retry the task.
func (j *job) stopped(ctx context.Context, res agent.Result) (string, error) {
	rctx, cancel := j.w.reportCtx(ctx)
	defer cancel()
	m, marked, err := j.w.state.cancelFor(rctx, j.taskID, j.p.DeliveryID)
	if err != nil {
		j.log.Warn("read cancel marker", logattr.Err, err)
	}
	if !marked {
		j.record(rctx, res, func(mt *runs.Meta) { mt.Status = outcomeInterrupted })
		_ = j.status.show(rctx, func(d *statusData) { d.Phase = PhaseInterrupted }, true)
		cause := context.Cause(ctx)
		if cause == nil {
			cause = errors.New(res.Reason)
		}
		return outcomeInterrupted, fmt.Errorf("job interrupted: %w", cause)
	}
	return j.cancelled(rctx, m, res)
}

// cancelled reports a job its marker stopped.
func (j *job) cancelled(ctx context.Context, m cancelMarker, res agent.Result) (string, error) {
	detail := cancelDetail(m)
	_ = j.status.show(ctx, func(d *statusData) {
		d.Phase, d.StoppedBy, d.Detail, d.Outcome = PhaseCancelled, m.By, detail, outcomeCancelled
	}, true)
	j.endRound(ctx, outcomeCancelled, "", res)
	if m.Reason == reasonStop {
		if err := j.finalComment(ctx, finalData{Outcome: outcomeCancelled, StoppedBy: m.By}, res); err != nil {
			j.log.Warn("post final comment", logattr.Err, err)
		}
	}
	j.record(ctx, res, func(mt *runs.Meta) { mt.Status = outcomeCancelled })
	_ = j.w.state.saveResult(ctx, j.key, savedResult{RunID: j.runID(), Result: res, Done: &publishedResult{Outcome: outcomeCancelled}})
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

// runID returns the id of the job's run, "" before it has one.
func (j *job) runID() string {
	if j.rec == nil {
		return ""
	}
	return j.rec.ID()
}

// record writes the agent's result into the run record, if the job has
// one yet, and mirrors it.
func (j *job) record(ctx context.Context, res agent.Result, edit func(*runs.Meta)) {
	run := j.rec
	if run == nil {
		return
	}
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

// endWaitingStatus ends the status comment of a job that stops before it
// starts working: the one the notice posted ("queued"), or one it posts
// itself when it got there first — so a notice that comes later finds a
// final status, not a "queued" one that stays. A locked issue may refuse
// the comment; that is left at that.
func (j *job) endWaitingStatus(ctx context.Context) {
	ref, err := j.w.ensureStatus(ctx, j.gh, j.repo, j.p.Number, j.key, j.p.Requester.Login)
	if err != nil {
		j.log.Info("no status comment to end", logattr.Err, err)
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
