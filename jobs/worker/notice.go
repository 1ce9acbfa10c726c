package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
)

// handleNotice is the interactive side of a trigger delivery (DESIGN.md
// §4): 👀 on what triggered, then what the edge's outcome needs — the
// permission check and the status comment of a queued job, "already
// working" with a link, a follow-up kept, "not my PR", stop, resume, help.
func (w *Worker) handleNotice(ctx context.Context, t *asynq.Task) error {
	n, err := jobs.Decode[jobs.Notice](t.Payload())
	if err == nil {
		_, err = ghapp.ParseRepo(n.Repo.FullName)
	}
	if err != nil {
		w.log.Error("notice task with a bad payload", logattr.Err, err)
		w.metrics.job(jobs.TypeNotice, outcome.Invalid)
		return skip(err)
	}
	log := w.log.With(logattr.DeliveryID, n.DeliveryID, logattr.Repo, n.Repo.FullName, logattr.Issue, n.Number,
		logattr.InstallationID, n.Installation, logattr.Outcome, n.Outcome)
	gh, err := w.opts.GitHub.Installation(n.Installation)
	if err != nil {
		w.metrics.job(jobs.TypeNotice, outcome.Invalid)
		return skip(err)
	}
	nt := &notice{w: w, n: n, gh: gh, log: log}
	nt.repo, _ = ghapp.ParseRepo(n.Repo.FullName)
	o, err := nt.handle(ctx)
	w.metrics.job(jobs.TypeNotice, o)
	if err != nil {
		log.Warn("notice failed", logattr.Outcome, o, logattr.Err, err)
	}
	return taskError(o, err)
}

// notice is one notice task.
type notice struct {
	w    *Worker
	n    jobs.Notice
	repo ghapp.Repo
	gh   GitHub
	log  *slog.Logger
}

func (nt *notice) handle(ctx context.Context) (outcome.Outcome, error) {
	if err := nt.acknowledge(ctx); err != nil {
		return outcome.Error, err
	}
	n := nt.n
	switch n.Outcome {
	case jobs.OutcomeQueued:
		return nt.queued(ctx)
	case jobs.OutcomeAlreadyWorking:
		return nt.alreadyWorking(ctx)
	case jobs.OutcomeFollowUpKept:
		return nt.followUp(ctx)
	case jobs.OutcomeNotBotsPR:
		d := nt.w.replies.data(n.Requester.Login, n.DeliveryID)
		return posted(outcome.Replied, nt.w.replies.post(ctx, nt.gh, nt.repo, n.Number, report.ReplyNotMyPR, d))
	case jobs.OutcomeStop:
		return nt.stop(ctx)
	case jobs.OutcomeResume:
		return nt.resume(ctx)
	case jobs.OutcomeHelp:
		return nt.help(ctx)
	}
	return outcome.Invalid, skip(fmt.Errorf("notice outcome %q is unknown", n.Outcome))
}

// statusOf names the status comment of the notice's agent job.
func (nt *notice) statusOf() statusOf {
	n := nt.n
	return statusOf{install: n.Installation, repo: nt.repo, number: n.Number, taskID: n.AgentTaskID,
		delivery: n.DeliveryID, requester: n.Requester.Login}
}

// acknowledge puts 👀 on what triggered: the comment, the inline review
// comment, or the issue for a label. A review has no reactions API.
func (nt *notice) acknowledge(ctx context.Context) error {
	n := nt.n
	var err error
	switch n.Trigger.Kind {
	case jobs.TriggerLabel:
		err = nt.gh.ReactToIssue(ctx, nt.repo, n.Number, ghapp.ReactionEyes)
	case jobs.TriggerIssueComment:
		err = nt.gh.ReactToComment(ctx, nt.repo, n.Trigger.CommentID, ghapp.ReactionEyes)
	case jobs.TriggerReviewComment:
		err = nt.gh.ReactToReviewComment(ctx, nt.repo, n.Trigger.CommentID, ghapp.ReactionEyes)
	}
	if errors.Is(err, ghapp.ErrNotFound) {
		nt.log.Info("what triggered is gone; no reaction", logattr.Err, err)
		return nil
	}
	return err
}

// allowed checks the requester may start work; when not, it refuses once
// per user per issue and reports false.
func (nt *notice) allowed(ctx context.Context) (bool, error) {
	n := nt.n
	return nt.w.gate.permitted(ctx, nt.gh, nt.repo, n.Number, n.IsPR, n.Requester.Login, n.DeliveryID)
}

// admit checks a queued trigger against the repository's settings before
// its job starts: a requester allowed_users or allowed_teams leave out, or
// a used-up daily budget, gets a reply and its pending job is removed (a
// non-empty outcome). An invalid configuration lets the job go on: it
// tells the requester in its status comment.
func (nt *notice) admit(ctx context.Context) (outcome.Outcome, error) {
	n := nt.n
	s, err := nt.w.settings.load(ctx, n.Installation, nt.repo)
	var bad *repoConfigError
	if errors.As(err, &bad) {
		return "", nil
	}
	if err != nil {
		return outcome.Error, err
	}
	r, err := nt.w.gate.admit(ctx, admission{gh: nt.gh, installation: n.Installation, repo: nt.repo, number: n.Number, isPR: n.IsPR,
		requester: n.Requester.Login, deliveryID: n.DeliveryID}, s)
	if errors.As(err, &bad) {
		return "", nil
	}
	if err != nil {
		return outcome.Error, err
	}
	if r == nil {
		return "", nil
	}
	if err := nt.w.deletePending(ctx, n.AgentTaskID, n.DeliveryID); err != nil {
		nt.log.Warn("remove the job of a refused trigger", logattr.Err, err)
	}
	return r.outcome, nil
}

// queued checks the requester of a job just enqueued, and the repository's
// settings (gate), and posts its status comment; for a requester without
// write access, or one the settings refuse, it removes the job while it is
// still pending (the job checks again if it already started).
func (nt *notice) queued(ctx context.Context) (outcome.Outcome, error) {
	n := nt.n
	ok, err := nt.allowed(ctx)
	if err != nil {
		return outcome.Error, err
	}
	if !ok {
		if err := nt.w.deletePending(ctx, n.AgentTaskID, n.DeliveryID); err != nil {
			nt.log.Warn("remove the job of a refused requester", logattr.Err, err)
		}
		return outcome.Unauthorized, nil
	}
	if o, err := nt.admit(ctx); o != "" {
		return o, err
	}
	if n.IsPR {
		return nt.queuedRound(ctx)
	}
	if _, err := nt.w.statuses.ensure(ctx, nt.gh, nt.statusOf()); err != nil {
		return outcome.Error, err
	}
	return outcome.Acknowledged, nil
}

// alreadyWorking answers a trigger while the issue's job is queued or
// running, with a link to that job's status comment.
func (nt *notice) alreadyWorking(ctx context.Context) (outcome.Outcome, error) {
	n := nt.n
	if ok, err := nt.allowed(ctx); err != nil {
		return outcome.Error, err
	} else if !ok {
		return outcome.Unauthorized, nil
	}
	d := nt.w.replies.data(n.Requester.Login, n.DeliveryID)
	d.Link = nt.w.runningStatusLink(ctx, n.AgentTaskID)
	if d.Link == "" {
		d.Link = fmt.Sprintf("#%d", n.Number)
	}
	return posted(outcome.Replied, nt.w.replies.post(ctx, nt.gh, nt.repo, n.Number, report.ReplyAlreadyWorking, d))
}

// runningStatusLink returns the status comment URL of the job agent task
// id is running or waiting for, or "".
func (w *Worker) runningStatusLink(ctx context.Context, taskID string) string {
	info, err := w.inspector.GetTaskInfo(jobs.QueueAgent, taskID)
	if err != nil {
		return ""
	}
	ref, ok, err := w.store.KnownStatusComment(ctx, store.JobKey(taskID, payloadDelivery(info.Payload)))
	if err != nil || !ok {
		return ""
	}
	return ref.URL
}

// help answers help, at most once per user per issue every ten minutes.
func (nt *notice) help(ctx context.Context) (outcome.Outcome, error) {
	n := nt.n
	key := store.HelpClaim(nt.repo, n.Number, n.Requester.Login)
	first, err := nt.w.store.ClaimOnce(ctx, key)
	if err != nil {
		return outcome.Error, err
	}
	if !first {
		return outcome.RateLimited, nil
	}
	d := nt.w.replies.data(n.Requester.Login, n.DeliveryID)
	d.Limits = nt.w.repoLimits(ctx, n.Installation, nt.repo)
	if err := nt.w.replies.post(ctx, nt.gh, nt.repo, n.Number, report.ReplyHelp, d); err != nil {
		nt.w.store.Unclaim(ctx, key)
		return outcome.Error, err
	}
	return outcome.Replied, nil
}

// deletePending removes agent task id while it waits, if it is the one of
// deliveryID.
func (w *Worker) deletePending(ctx context.Context, id, deliveryID string) error {
	info, err := w.inspector.GetTaskInfo(jobs.QueueAgent, id)
	if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if payloadDelivery(info.Payload) != deliveryID {
		return nil
	}
	switch info.State {
	case asynq.TaskStatePending, asynq.TaskStateScheduled, asynq.TaskStateRetry:
		if err := w.inspector.DeleteTask(jobs.QueueAgent, id); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
			return err
		}
		if info.Type == jobs.TypeRevise {
			w.roundGone(ctx, info.Payload, false)
		}
	}
	return nil
}
