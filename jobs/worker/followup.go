package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
)

// Follow-up rounds (DESIGN.md §4): the commands kept while a round is
// queued or running start one follow-up round when it ends; package store
// (followup.go there) holds the state machine and its keys.

// keepCommand keeps c for the next round of pull request pr and, when the
// round that held the task id has just ended, enqueues the follow-up task
// that starts it.
func (w *Worker) keepCommand(ctx context.Context, f jobs.FollowUp, c jobs.KeptCommand) error {
	taskID := jobs.ReviseTaskID(f.Repo.FullName, f.Number)
	ended, err := w.store.Keep(ctx, taskID, c)
	if err != nil || ended == "" {
		return err
	}
	f.DeliveryID, f.After = c.DeliveryID, ended
	if err := w.queue.SubmitFollowUp(ctx, f); err != nil && !errors.Is(err, jobs.ErrDuplicate) {
		return err
	}
	return nil
}

// roundEnded marks the round of j ended and, when commands were kept
// meanwhile, enqueues the follow-up task that starts one round for them.
// Failures are logged: the kept commands stay and the next round's end
// takes them.
func (w *Worker) roundEnded(ctx context.Context, j *job, author jobs.User) {
	ctx, cancel := w.reportCtx(ctx)
	defer cancel()
	n, err := w.store.RoundEnded(ctx, j.taskID, j.delivery)
	if err == nil && n > 0 {
		err = w.queue.SubmitFollowUp(ctx, jobs.FollowUp{
			DeliveryID: j.delivery, Installation: j.install, Repo: j.clone, Number: j.thread,
			Author: author, After: j.delivery,
		})
		if errors.Is(err, jobs.ErrDuplicate) {
			err = nil
		}
	}
	if err != nil {
		j.log.Warn("start the follow-up round", logattr.Err, err)
	}
}

// handleFollowUp starts the follow-up round of a pull request: it waits
// until asynq has finished the round that ended (f.After), then enqueues
// one revise task for the commands kept, and posts its status comment.
// When another round holds the task id meanwhile, that round takes the
// commands when it ends.
func (w *Worker) handleFollowUp(ctx context.Context, t *asynq.Task) error {
	f, err := jobs.Decode[jobs.FollowUp](t.Payload())
	var repo ghapp.Repo
	if err == nil {
		repo, err = ghapp.ParseRepo(f.Repo.FullName)
	}
	if err != nil {
		w.metrics.job(jobs.TypeFollowUp, outcome.Invalid)
		return skip(err)
	}
	taskID := jobs.ReviseTaskID(f.Repo.FullName, f.Number)
	log := w.log.With(logattr.Task, taskID, logattr.DeliveryID, f.DeliveryID, logattr.Repo, f.Repo.FullName, logattr.PR, f.Number)
	o, err := w.startFollowUp(ctx, f, repo, taskID, log)
	w.metrics.job(jobs.TypeFollowUp, o)
	if err != nil {
		log.Warn("follow-up task failed", logattr.Outcome, o, logattr.Err, err)
	}
	return taskError(o, err)
}

func (w *Worker) startFollowUp(ctx context.Context, f jobs.FollowUp, repo ghapp.Repo, taskID string, log *slog.Logger) (outcome.Outcome, error) {
	delivery := jobs.FollowUpDeliveryID(f.DeliveryID)
	for {
		info, err := w.inspector.GetTaskInfo(jobs.QueueAgent, taskID)
		if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
			break
		}
		if err != nil {
			return outcome.Error, err
		}
		d := payloadDelivery(info.Payload)
		if d == delivery { // a retry: the round is enqueued; its commands may still be kept
			return w.takeAnswered(ctx, taskID, info.Payload)
		}
		if info.State == asynq.TaskStateCompleted || info.State == asynq.TaskStateArchived {
			break
		}
		if d != f.After || info.State != asynq.TaskStateActive {
			log.Info("another round holds the pull request; it takes the kept commands when it ends")
			return outcome.Kept, nil
		}
		if err := pause(ctx, w.opts.Poll); err != nil { // the ended round's handler is returning
			return outcome.Error, err
		}
	}
	kept, err := w.store.KeptCommands(ctx, taskID)
	if err != nil {
		return outcome.Error, err
	}
	if len(kept) == 0 {
		return outcome.NothingKept, nil
	}
	first := kept[0]
	p := jobs.RevisePR{
		DeliveryID: delivery, Installation: f.Installation, Repo: f.Repo, Number: f.Number,
		Trigger: first.Trigger, Requester: first.Requester, Instructions: first.Instructions, Author: f.Author,
		FollowUps: kept,
	}
	queued, err := w.queue.EnqueueRevise(ctx, p)
	if err != nil {
		return outcome.Error, err
	}
	if queued != jobs.OutcomeQueued {
		log.Info("another round took the pull request meanwhile; it takes the kept commands when it ends")
		return outcome.Kept, nil
	}
	if err := w.store.TakeKept(ctx, taskID, kept); err != nil {
		return outcome.Error, err
	}
	log.Info(fmt.Sprintf("follow-up round %s queued for %d kept commands", delivery, len(kept)))
	// Its status comment now, so the pull request shows it is queued.
	gh, err := w.opts.GitHub.Installation(f.Installation)
	if err == nil {
		_, err = w.statuses.ensure(ctx, gh, statusOf{install: f.Installation, repo: repo, number: f.Number, taskID: taskID, delivery: delivery, requester: first.Requester.Login})
	}
	if err != nil {
		log.Warn("post the follow-up round's status comment; the round posts it when it starts", logattr.Err, err)
	}
	return outcome.FollowUpStarted, nil
}

// takeAnswered removes the commands the enqueued follow-up round (its task
// payload) answers from those kept.
func (w *Worker) takeAnswered(ctx context.Context, taskID string, payload []byte) (outcome.Outcome, error) {
	p, err := jobs.Decode[jobs.RevisePR](payload)
	if err != nil {
		return outcome.Invalid, err
	}
	if err := w.store.TakeKept(ctx, taskID, p.FollowUps); err != nil {
		return outcome.Error, err
	}
	return outcome.FollowUpStarted, nil
}

// followUp keeps a command that came while the pull request's revise task
// is queued or running, for one follow-up round when it ends, and says so.
// An inline comment of the very review the running round answers is not
// kept: that round sees the whole review.
func (nt *notice) followUp(ctx context.Context) (outcome.Outcome, error) {
	n := nt.n
	if ok, err := nt.allowed(ctx); err != nil {
		return outcome.Error, err
	} else if !ok {
		return outcome.Unauthorized, nil
	}
	if o, err := nt.admit(ctx); o != "" {
		return o, err
	}
	if n.Trigger.ReviewID != 0 && nt.w.runningReview(n.AgentTaskID) == n.Trigger.ReviewID {
		return outcome.Acknowledged, nil
	}
	f := jobs.FollowUp{Installation: n.Installation, Repo: n.Repo, Number: n.Number}
	if n.Author != nil {
		f.Author = *n.Author
	}
	c := jobs.KeptCommand{DeliveryID: n.DeliveryID, Requester: n.Requester, Trigger: n.Trigger, Instructions: n.Command.Instructions}
	if err := nt.w.keepCommand(ctx, f, c); err != nil {
		return outcome.Error, err
	}
	d := nt.w.replies.data(n.Requester.Login, n.DeliveryID)
	d.Link = nt.w.runningStatusLink(ctx, n.AgentTaskID)
	return posted(outcome.Kept, nt.w.replies.post(ctx, nt.gh, nt.repo, n.Number, report.ReplyKept, d))
}

// runningReview returns the review the revise task id answers, 0 when it
// answers none or is gone.
func (w *Worker) runningReview(taskID string) int64 {
	info, err := w.inspector.GetTaskInfo(jobs.QueueAgent, taskID)
	if err != nil {
		return 0
	}
	p, err := jobs.Decode[jobs.RevisePR](info.Payload)
	if err != nil {
		return 0
	}
	return p.Trigger.ReviewID
}

// queuedRound checks the pull request of a round just enqueued is this
// App's own — else it removes the round while it waits and replies once —
// and posts the round's status comment on it.
func (nt *notice) queuedRound(ctx context.Context) (outcome.Outcome, error) {
	n := nt.n
	pr, err := nt.gh.PR(ctx, nt.repo, n.Number)
	if err != nil {
		return outcome.Error, err
	}
	mine, err := nt.w.isBotPR(ctx, pr)
	if err != nil {
		return outcome.Error, err
	}
	if !mine {
		if err := nt.w.deletePending(ctx, n.AgentTaskID, n.DeliveryID); err != nil {
			nt.log.Warn("remove the round of another bot's pull request", logattr.Err, err)
		}
		d := nt.w.replies.data(n.Requester.Login, n.DeliveryID)
		return posted(outcome.NotBotsPR, nt.w.replies.post(ctx, nt.gh, nt.repo, n.Number, report.ReplyNotMyPR, d))
	}
	if _, err := nt.w.statuses.ensure(ctx, nt.gh, nt.statusOf()); err != nil {
		return outcome.Error, err
	}
	return outcome.Acknowledged, nil
}

// moveToPR turns a fix trigger on an issue whose bot pull request is open
// into a round on that pull request (DESIGN.md §4), run by its revise task
// with the same delivery — or, while a round runs there, into a command
// kept for the next one. The issue's status comment says where the work
// went.
func (w *Worker) moveToPR(ctx context.Context, j *job, pr ghapp.PullRequest) (outcome.Outcome, error) {
	author := jobs.User{Login: pr.Author, Type: "Bot"}
	p := jobs.RevisePR{
		DeliveryID: j.delivery, Installation: j.install, Repo: j.clone, Number: pr.Number,
		Trigger: j.trigger, Requester: j.requester, Instructions: j.instructions, Author: author,
	}
	queued, err := w.queue.EnqueueRevise(ctx, p)
	if err != nil {
		return outcome.Error, err
	}
	detail := "the work goes on there as a new round."
	o := outcome.Moved
	if queued != jobs.OutcomeQueued {
		c := jobs.KeptCommand{DeliveryID: j.delivery, Requester: j.requester, Trigger: j.trigger, Instructions: j.instructions}
		if err := w.keepCommand(ctx, jobs.FollowUp{Installation: j.install, Repo: j.clone, Number: pr.Number, Author: author}, c); err != nil {
			return outcome.Error, err
		}
		detail, o = "a round is running there; this request runs in the next round when it ends.", outcome.Kept
	}
	j.show(ctx, func(d *report.Status) {
		d.Phase, d.PRNumber, d.PRURL, d.Detail, d.Outcome = report.PhaseMoved, pr.Number, pr.HTMLURL, detail, o
	})
	return o, nil
}

// roundGone ends, for the commands kept meanwhile, a round deleted before
// it ran (payload is its task's): after a stop (drop) they are dropped
// with it; otherwise they start a follow-up round, as at a round's end.
// Failures are logged.
func (w *Worker) roundGone(ctx context.Context, payload []byte, drop bool) {
	p, err := jobs.Decode[jobs.RevisePR](payload)
	if err != nil {
		w.log.Warn("a deleted round's payload", logattr.Err, err)
		return
	}
	taskID := jobs.ReviseTaskID(p.Repo.FullName, p.Number)
	if drop {
		if _, err := w.store.DropKept(ctx, taskID); err != nil {
			w.log.Warn("drop the commands kept for a stopped round", logattr.Task, taskID, logattr.Err, err)
		}
	}
	n, err := w.store.RoundEnded(ctx, taskID, p.DeliveryID)
	if err == nil && n > 0 {
		err = w.queue.SubmitFollowUp(ctx, jobs.FollowUp{
			DeliveryID: p.DeliveryID, Installation: p.Installation, Repo: p.Repo, Number: p.Number, Author: p.Author, After: p.DeliveryID,
		})
		if errors.Is(err, jobs.ErrDuplicate) {
			err = nil
		}
	}
	if err != nil {
		w.log.Warn("start the follow-up of a deleted round", logattr.Task, taskID, logattr.Err, err)
	}
}

// issueRound returns the revise task id of the open bot pull request of
// issue n, "" when it has none. The branch follows the repository's
// branch_prefix (the default one when its configuration cannot be read).
func (w *Worker) issueRound(ctx context.Context, installation int64, fullName string, n int) (string, error) {
	repo, err := ghapp.ParseRepo(fullName)
	if err != nil {
		return "", err
	}
	gh, err := w.opts.GitHub.Installation(installation)
	if err != nil {
		return "", err
	}
	branch := BranchPrefix + strconv.Itoa(n)
	if s, err := w.settings.load(ctx, installation, repo); err == nil {
		branch = s.branch(n) // the repository's branch_prefix
	}
	pr, open, err := gh.FindPR(ctx, repo, branch)
	if err != nil || !open {
		return "", err
	}
	return jobs.ReviseTaskID(fullName, pr.Number), nil
}
