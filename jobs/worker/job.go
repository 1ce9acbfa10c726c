package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
	"github.com/agentfix/agentfix/runs"
)

// job is one run of an agent task for one trigger (delivery): who asked,
// for what, where the job talks, and what it found and made so far. The
// fix and the round pipelines (fix.go, revise.go) fill it in as they go;
// the steps take what they need of it.
type job struct {
	kind     string // jobs.TypeFix or jobs.TypeRevise: the metric's label
	taskID   string
	key      string // store.JobKey
	delivery string
	install  int64
	repo     ghapp.Repo
	// clone is the payload's repository (its clone URL when the API gives
	// none).
	clone     jobs.Repo
	requester jobs.User
	trigger   jobs.Trigger
	// instructions are what the requester wrote after the command.
	instructions string
	// kept are the commands kept meanwhile that a follow-up round answers
	// too (none for a fix).
	kept []jobs.KeptCommand
	// message, when set, is the message of the job's commit instead of
	// the fix's (an automatic round's).
	message string
	// number is the issue the change fixes; thread is where the job talks
	// (the issue, or a round's pull request), onPR is set for a round.
	number, thread int
	onPR           bool
	gh             GitHub
	log            *slog.Logger
	started        time.Time

	// What the job found and made.
	issue  ghapp.Issue
	cfg    repoSettings
	branch string
	status *report.StatusComment
	rec    *runs.Run
	saved  store.Saved
	// resumed is set when an earlier attempt saved the agent's result: the
	// job publishes it instead of running the agent again.
	resumed bool
}

// runID returns the id of the job's run, "" before it has one.
func (j *job) runID() string {
	if j.rec == nil {
		return ""
	}
	return j.rec.ID()
}

// show edits the job's status comment, if it has one yet.
func (j *job) show(ctx context.Context, edit func(*report.Status)) {
	if j.status != nil {
		_ = j.status.Show(ctx, edit, true)
	}
}

// pipeline is a fix or a revise round: run does the job and returns how it
// ended; failed reports a job whose last attempt failed (giveUp).
type pipeline interface {
	run(ctx context.Context) (outcome.Outcome, error)
	job() *job
	failed(ctx context.Context, cause error) outcome.Outcome
}

// runJob runs p under its job's lock, reports a last attempt that failed,
// counts and logs the outcome, and returns the error for asynq: nil or
// wrapping asynq.SkipRetry when the outcome is final, the cause when it is
// retried.
func (w *Worker) runJob(ctx context.Context, p pipeline) error {
	j := p.job()
	unlock, err := w.store.LockJob(ctx, j.key)
	if err != nil {
		w.metrics.job(j.kind, outcome.Error)
		return err
	}
	defer unlock()
	o, err := p.run(ctx)
	if !o.Final() && o != outcome.Interrupted && lastAttempt(ctx) {
		o = p.failed(ctx, err)
	}
	w.metrics.job(j.kind, o)
	if !o.Final() {
		j.log.Warn(j.kind+" job failed; it will be retried", logattr.Outcome, o, logattr.Err, err)
		if err == nil {
			err = fmt.Errorf("%s job ended %s", j.kind, o)
		}
		return err
	}
	if j.saved.Done == nil {
		// Every final outcome is marked reported, so the sweep (sweep.go)
		// leaves the archived task alone.
		j.saved.Done = &store.Published{Outcome: o}
		if serr := w.store.SaveResult(context.WithoutCancel(ctx), j.key, j.saved); serr != nil {
			j.log.Warn("mark job reported", logattr.Err, serr)
		}
	}
	w.journal.remove(j.key)
	if err != nil {
		j.log.Info(j.kind+" job ended", logattr.Outcome, o, logattr.Err, err)
		return skip(err)
	}
	j.log.Info(j.kind+" job ended", logattr.Outcome, o)
	return nil
}

// lastAttempt reports whether asynq will not retry the task after this
// attempt fails.
func lastAttempt(ctx context.Context) bool {
	n, ok1 := asynq.GetRetryCount(ctx)
	limit, ok2 := asynq.GetMaxRetry(ctx)
	return ok1 && ok2 && n >= limit
}

// skip marks err as final: asynq archives the task instead of retrying it.
func skip(err error) error {
	if errors.Is(err, asynq.SkipRetry) {
		return err
	}
	return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
}

// retryDelay waits briefly before retrying a task cancelled by stop (the
// retry only sees the cancel marker and ends, so the task id is free for the
// next trigger), and backs off exponentially otherwise: 10 s, 20 s, 40 s, …
// up to 10 minutes.
func retryDelay(n int, err error) time.Duration {
	if errors.Is(err, context.Canceled) {
		return time.Second
	}
	return min(10*time.Second<<min(n, 10), 10*time.Minute)
}

// reportCtx is the context of reports to GitHub after the agent ran: they
// go on when the job's context is cancelled, for at most GitHubTimeout.
func (w *Worker) reportCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), w.opts.GitHubTimeout)
}

// pause waits d or until ctx is done.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// posted is the outcome o of a task whose last step was a post: o when it
// succeeded, else Error and the post's error, for a retry.
func posted(o outcome.Outcome, err error) (outcome.Outcome, error) {
	if err != nil {
		return outcome.Error, err
	}
	return o, nil
}

// taskError is the error for asynq of an interactive task that ended with
// o and err: final outcomes are not retried.
func taskError(o outcome.Outcome, err error) error {
	if err != nil && o.Final() {
		return skip(err)
	}
	if err == nil && !o.Final() {
		return fmt.Errorf("task ended %s", o)
	}
	return err
}
