package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
)

// Follow-up rounds (DESIGN.md §4). A command on a pull request whose
// revise task is queued or running is kept in a Redis list,
// agentfix:followup:<task id>; when the round ends for good, the kept
// commands start one follow-up round that answers them all.
//
// The ending round still holds the revise task id while its handler runs,
// so it cannot enqueue the next round itself: it enqueues a follow-up task
// on the interactive queue, which waits until asynq has finished the round,
// then enqueues the follow-up round — under the revise task id again, so
// one round per pull request at a time still holds — with the delivery id
// jobs.FollowUpDeliveryID of the ended round's, and removes the commands it
// took from the list.
//
// A command kept just as the round ends must not be stranded. The round,
// as it ends, sets agentfix:roundend:<task id> to its delivery and then
// counts the list; the notice that keeps a command pushes it and then reads
// that marker, in one transaction. Either the round's count sees the
// command, or the notice sees the marker and enqueues a follow-up task
// itself. A new round clears the marker as it starts.
const (
	roundEndPrefix = "agentfix:roundend:"
	// maxKept bounds the commands one follow-up round answers; more wait
	// for the round after it.
	maxKept = 20
)

// keep appends c to the commands kept for task id and returns the delivery
// of the round that ended meanwhile, "" while one is queued or running.
func (s state) keep(ctx context.Context, taskID string, c jobs.KeptCommand) (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("keep command for %s: %w", taskID, err)
	}
	k := followupPrefix + taskID
	var ended *redis.StringCmd
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.RPush(ctx, k, b)
		p.Expire(ctx, k, followupTTL)
		ended = p.Get(ctx, roundEndPrefix+taskID)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("keep command for %s: %w", taskID, err)
	}
	v, err := ended.Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}

// roundStarted clears the round-end marker of task id: from now on the
// running round takes the commands kept.
func (s state) roundStarted(ctx context.Context, taskID string) error {
	if err := s.rdb.Del(ctx, roundEndPrefix+taskID).Err(); err != nil {
		return fmt.Errorf("start round of %s: %w", taskID, err)
	}
	return nil
}

// roundEnded sets the round-end marker of task id to deliveryID and
// returns how many commands are kept.
func (s state) roundEnded(ctx context.Context, taskID, deliveryID string) (int64, error) {
	var n *redis.IntCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, roundEndPrefix+taskID, deliveryID, followupTTL)
		n = p.LLen(ctx, followupPrefix+taskID)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("end round of %s: %w", taskID, err)
	}
	return n.Val(), nil
}

// keptCommands returns the first maxKept commands kept for task id.
func (s state) keptCommands(ctx context.Context, taskID string) ([]jobs.KeptCommand, error) {
	raw, err := s.rdb.LRange(ctx, followupPrefix+taskID, 0, maxKept-1).Result()
	if err != nil {
		return nil, fmt.Errorf("kept commands of %s: %w", taskID, err)
	}
	return decodeKept(taskID, raw)
}

// takeKept removes from the head of task id's kept commands those of
// answered (a follow-up round answers them), matched in order by delivery,
// so a retry that finds them removed already removes nothing; commands
// kept since stay. Only follow-up tasks remove from the head and notices
// append at the tail, so the two steps need no transaction.
func (s state) takeKept(ctx context.Context, taskID string, answered []jobs.KeptCommand) error {
	head, err := s.keptCommands(ctx, taskID)
	if err != nil {
		return err
	}
	n := 0
	for n < len(head) && n < len(answered) && head[n].DeliveryID == answered[n].DeliveryID {
		n++
	}
	if err := s.rdb.LTrim(ctx, followupPrefix+taskID, int64(n), -1).Err(); err != nil {
		return fmt.Errorf("take kept commands of %s: %w", taskID, err)
	}
	return nil
}

// dropKept removes and returns every command kept for task id.
func (s state) dropKept(ctx context.Context, taskID string) ([]jobs.KeptCommand, error) {
	var all *redis.StringSliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		all = p.LRange(ctx, followupPrefix+taskID, 0, -1)
		p.Del(ctx, followupPrefix+taskID)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("drop kept commands of %s: %w", taskID, err)
	}
	return decodeKept(taskID, all.Val())
}

func decodeKept(taskID string, raw []string) ([]jobs.KeptCommand, error) {
	out := make([]jobs.KeptCommand, 0, len(raw))
	for _, r := range raw {
		var c jobs.KeptCommand
		if err := json.Unmarshal([]byte(r), &c); err != nil {
			return nil, fmt.Errorf("kept command of %s: %w", taskID, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// keepCommand keeps c for the next round of pull request pr and, when the
// round that held the task id has just ended, enqueues the follow-up task
// that starts it.
func (w *Worker) keepCommand(ctx context.Context, f jobs.FollowUp, c jobs.KeptCommand) error {
	taskID := jobs.ReviseTaskID(f.Repo.FullName, f.Number)
	ended, err := w.state.keep(ctx, taskID, c)
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
func (w *Worker) roundEnded(ctx context.Context, j *job) {
	ctx, cancel := w.reportCtx(ctx)
	defer cancel()
	n, err := w.state.roundEnded(ctx, j.taskID, j.p.DeliveryID)
	if err == nil && n > 0 {
		err = w.queue.SubmitFollowUp(ctx, jobs.FollowUp{
			DeliveryID: j.p.DeliveryID, Installation: j.p.Installation, Repo: j.p.Repo, Number: j.thread,
			Author: j.round.author, After: j.p.DeliveryID,
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
		w.metrics.job(jobs.TypeFollowUp, outcomeInvalid)
		return skip(err)
	}
	taskID := jobs.ReviseTaskID(f.Repo.FullName, f.Number)
	log := w.log.With(logattr.Task, taskID, logattr.DeliveryID, f.DeliveryID, logattr.Repo, f.Repo.FullName, logattr.PR, f.Number)
	outcome, err := w.startFollowUp(ctx, f, repo, taskID, log)
	w.metrics.job(jobs.TypeFollowUp, outcome)
	if err != nil {
		log.Warn("follow-up task failed", logattr.Err, err)
	}
	return err
}

func (w *Worker) startFollowUp(ctx context.Context, f jobs.FollowUp, repo ghapp.Repo, taskID string, log *slog.Logger) (string, error) {
	delivery := jobs.FollowUpDeliveryID(f.DeliveryID)
	for {
		info, err := w.inspector.GetTaskInfo(jobs.QueueAgent, taskID)
		if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
			break
		}
		if err != nil {
			return outcomeError, err
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
			return outcomeKept, nil
		}
		if err := sleep(ctx, w.opts.Poll); err != nil { // the ended round's handler is returning
			return outcomeError, err
		}
	}
	kept, err := w.state.keptCommands(ctx, taskID)
	if err != nil {
		return outcomeError, err
	}
	if len(kept) == 0 {
		return outcomeNothing, nil
	}
	first := kept[0]
	p := jobs.RevisePR{
		DeliveryID: delivery, Installation: f.Installation, Repo: f.Repo, Number: f.Number,
		Trigger: first.Trigger, Requester: first.Requester, Instructions: first.Instructions, Author: f.Author,
		FollowUps: kept,
	}
	queued, err := w.queue.EnqueueRevise(ctx, p)
	if err != nil {
		return outcomeError, err
	}
	if queued != jobs.OutcomeQueued {
		log.Info("another round took the pull request meanwhile; it takes the kept commands when it ends")
		return outcomeKept, nil
	}
	if err := w.state.takeKept(ctx, taskID, kept); err != nil {
		return outcomeError, err
	}
	log.Info(fmt.Sprintf("follow-up round %s queued for %d kept commands", delivery, len(kept)))
	// Its status comment now, so the pull request shows it is queued.
	gh, err := w.opts.GitHub.Installation(f.Installation)
	if err == nil {
		_, err = w.ensureStatus(ctx, gh, repo, f.Number, jobKey(taskID, delivery), first.Requester.Login)
	}
	if err != nil {
		log.Warn("post the follow-up round's status comment; the round posts it when it starts", logattr.Err, err)
	}
	return outcomeStarted, nil
}

// takeAnswered removes the commands the enqueued follow-up round (its task
// payload) answers from those kept.
func (w *Worker) takeAnswered(ctx context.Context, taskID string, payload []byte) (string, error) {
	p, err := jobs.Decode[jobs.RevisePR](payload)
	if err != nil {
		return outcomeError, skip(err)
	}
	if err := w.state.takeKept(ctx, taskID, p.FollowUps); err != nil {
		return outcomeError, err
	}
	return outcomeStarted, nil
}

// followUp keeps a command that came while the pull request's revise task
// is queued or running, for one follow-up round when it ends, and says so.
// An inline comment of the very review the running round answers is not
// kept: that round sees the whole review.
func (nt *notice) followUp(ctx context.Context) (string, error) {
	n := nt.n
	ok, err := nt.allowed(ctx)
	if err != nil || !ok {
		return outcomeUnauthorized, err
	}
	if outcome, refused, err := nt.gate(ctx); refused {
		return outcome, err
	}
	if n.Trigger.ReviewID != 0 && nt.w.runningReview(n.AgentTaskID) == n.Trigger.ReviewID {
		return outcomeAcknowledged, nil
	}
	f := jobs.FollowUp{Installation: n.Installation, Repo: n.Repo, Number: n.Number}
	if n.Author != nil {
		f.Author = *n.Author
	}
	c := jobs.KeptCommand{DeliveryID: n.DeliveryID, Requester: n.Requester, Trigger: n.Trigger, Instructions: n.Command.Instructions}
	if err := nt.w.keepCommand(ctx, f, c); err != nil {
		return outcomeError, err
	}
	d := nt.w.replyData(n.Requester.Login, n.DeliveryID)
	d.Link = nt.w.runningStatusLink(ctx, n.AgentTaskID)
	return outcomeKept, nt.w.reply(ctx, nt.gh, nt.repo, n.Number, tmplKept, d)
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
func (nt *notice) queuedRound(ctx context.Context) (string, error) {
	n := nt.n
	pr, err := nt.gh.PR(ctx, nt.repo, n.Number)
	if err != nil {
		return outcomeError, err
	}
	mine, err := nt.w.isBotPR(ctx, pr)
	if err != nil {
		return outcomeError, err
	}
	if !mine {
		if err := nt.w.deletePending(ctx, n.AgentTaskID, n.DeliveryID); err != nil {
			nt.log.Warn("remove the round of another bot's pull request", logattr.Err, err)
		}
		d := nt.w.replyData(n.Requester.Login, n.DeliveryID)
		return outcomeNotBotsPR, nt.w.reply(ctx, nt.gh, nt.repo, n.Number, tmplNotMyPR, d)
	}
	if _, err := nt.w.ensureStatus(ctx, nt.gh, nt.repo, n.Number, jobKey(n.AgentTaskID, n.DeliveryID), n.Requester.Login); err != nil {
		return outcomeError, err
	}
	return outcomeAcknowledged, nil
}

// moveToPR turns a fix trigger on an issue whose bot pull request is open
// into a round on that pull request (DESIGN.md §4), run by its revise task
// with the same delivery — or, while a round runs there, into a command
// kept for the next one. The issue's status comment says where the work
// went.
func (j *job) moveToPR(ctx context.Context, pr ghapp.PullRequest) (string, error) {
	author := jobs.User{Login: pr.Author, Type: "Bot"}
	p := jobs.RevisePR{
		DeliveryID: j.p.DeliveryID, Installation: j.p.Installation, Repo: j.p.Repo, Number: pr.Number,
		Trigger: j.p.Trigger, Requester: j.p.Requester, Instructions: j.p.Instructions, Author: author,
	}
	queued, err := j.w.queue.EnqueueRevise(ctx, p)
	if err != nil {
		return outcomeError, err
	}
	detail := "the work goes on there as a new round."
	outcome := outcomeMoved
	if queued != jobs.OutcomeQueued {
		c := jobs.KeptCommand{DeliveryID: j.p.DeliveryID, Requester: j.p.Requester, Trigger: j.p.Trigger, Instructions: j.p.Instructions}
		if err := j.w.keepCommand(ctx, jobs.FollowUp{Installation: j.p.Installation, Repo: j.p.Repo, Number: pr.Number, Author: author}, c); err != nil {
			return outcomeError, err
		}
		detail, outcome = "a round is running there; this request runs in the next round when it ends.", outcomeKept
	}
	_ = j.status.show(ctx, func(d *statusData) {
		d.Phase, d.PRNumber, d.PRURL, d.Detail, d.Outcome = PhaseMoved, pr.Number, pr.HTMLURL, detail, outcome
	}, true)
	return outcome, nil
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
		if _, err := w.state.dropKept(ctx, taskID); err != nil {
			w.log.Warn("drop the commands kept for a stopped round", logattr.Task, taskID, logattr.Err, err)
		}
	}
	n, err := w.state.roundEnded(ctx, taskID, p.DeliveryID)
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
	if s, err := w.loadRepoConfig(ctx, installation, repo); err == nil {
		branch = s.branch(n) // the repository's branch_prefix
	}
	pr, open, err := gh.FindPR(ctx, repo, branch)
	if err != nil || !open {
		return "", err
	}
	return jobs.ReviseTaskID(fullName, pr.Number), nil
}
