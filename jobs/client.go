package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// ErrDuplicate reports that a delivery's notice or cancel task exists
// already: the delivery was handled before.
var ErrDuplicate = errors.New("delivery already handled")

// conflictAttempts bounds the enqueue → inspect → delete loop of one agent
// task when other deliveries race on the same task id.
const conflictAttempts = 3

// Client enqueues the tasks of accepted deliveries. It is safe for
// concurrent use.
type Client struct {
	client      *asynq.Client
	inspector   *asynq.Inspector
	maxDuration time.Duration
}

// NewClient returns a Client on rdb (which the caller keeps and closes);
// agent tasks get a timeout of maxDuration plus AgentTimeoutMargin.
func NewClient(rdb redis.UniversalClient, maxDuration time.Duration) *Client {
	return &Client{
		client:      asynq.NewClientFromRedisClient(rdb),
		inspector:   asynq.NewInspectorFromRedisClient(rdb),
		maxDuration: maxDuration,
	}
}

// SubmitFix enqueues the fix task for p and then the notice of p's delivery,
// and returns the notice's outcome: OutcomeQueued, or OutcomeAlreadyWorking
// when a task for the issue is queued or running. It returns ErrDuplicate
// when the notice exists already.
func (c *Client) SubmitFix(ctx context.Context, p FixIssue) (Outcome, error) {
	task, err := NewFixTask(p, c.maxDuration)
	if err != nil {
		return "", err
	}
	id := FixTaskID(p.Repo.FullName, p.Number)
	outcome, err := c.enqueueAgent(ctx, task, id, p.DeliveryID, OutcomeAlreadyWorking)
	if err != nil {
		return "", err
	}
	n := Notice{
		DeliveryID: p.DeliveryID, Installation: p.Installation, Repo: p.Repo, Number: p.Number,
		Trigger: p.Trigger, Requester: p.Requester, Command: Command{Instructions: p.Instructions},
		Outcome: outcome, AgentTaskID: id,
	}
	return outcome, c.SubmitNotice(ctx, n)
}

// SubmitRevise enqueues the revise task for p and then the notice of p's
// delivery, and returns the notice's outcome: OutcomeQueued, or
// OutcomeFollowUpKept when a revise task for the PR is queued or running.
// It returns ErrDuplicate when the notice exists already.
func (c *Client) SubmitRevise(ctx context.Context, p RevisePR) (Outcome, error) {
	task, err := NewReviseTask(p, c.maxDuration)
	if err != nil {
		return "", err
	}
	id := ReviseTaskID(p.Repo.FullName, p.Number)
	outcome, err := c.enqueueAgent(ctx, task, id, p.DeliveryID, OutcomeFollowUpKept)
	if err != nil {
		return "", err
	}
	author := p.Author
	n := Notice{
		DeliveryID: p.DeliveryID, Installation: p.Installation, Repo: p.Repo, Number: p.Number, IsPR: true,
		Trigger: p.Trigger, Requester: p.Requester, Command: Command{Instructions: p.Instructions},
		Author: &author, Outcome: outcome, AgentTaskID: id,
	}
	return outcome, c.SubmitNotice(ctx, n)
}

// SubmitNotice enqueues a notice task alone (stop, help, a PR the bot did
// not open). It returns ErrDuplicate when the delivery's notice exists.
func (c *Client) SubmitNotice(ctx context.Context, n Notice) error {
	task, err := NewNoticeTask(n)
	if err != nil {
		return err
	}
	return c.enqueueOnce(ctx, task, NoticeTaskID(n.DeliveryID))
}

// SubmitCancel enqueues a cancel task. It returns ErrDuplicate when the
// delivery's cancel task exists.
func (c *Client) SubmitCancel(ctx context.Context, p Cancel) error {
	task, err := NewCancelTask(p)
	if err != nil {
		return err
	}
	return c.enqueueOnce(ctx, task, CancelTaskID(p.DeliveryID))
}

func (c *Client) enqueueOnce(ctx context.Context, task *asynq.Task, id string) error {
	_, err := c.client.EnqueueContext(ctx, task)
	switch {
	case errors.Is(err, asynq.ErrTaskIDConflict):
		return fmt.Errorf("enqueue %s: %w", id, ErrDuplicate)
	case err != nil:
		return fmt.Errorf("enqueue %s: %w", id, err)
	}
	return nil
}

// enqueueAgent enqueues an agent task under DESIGN.md §4's conflict rule.
// When the id is taken, the existing task decides: written by this very
// delivery (a redelivery after a half-failed enqueue) → ours, OutcomeQueued;
// completed or archived → deleted and enqueued again, since a new trigger
// after a job ended runs again; queued or running → busy.
func (c *Client) enqueueAgent(ctx context.Context, task *asynq.Task, id, deliveryID string, busy Outcome) (Outcome, error) {
	for range conflictAttempts {
		_, err := c.client.EnqueueContext(ctx, task)
		if err == nil {
			return OutcomeQueued, nil
		}
		if !errors.Is(err, asynq.ErrTaskIDConflict) {
			return "", fmt.Errorf("enqueue %s: %w", id, err)
		}
		info, err := c.inspector.GetTaskInfo(QueueAgent, id)
		if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
			continue // it ended and was removed meanwhile
		}
		if err != nil {
			return "", fmt.Errorf("inspect %s: %w", id, err)
		}
		if payloadDelivery(info.Payload) == deliveryID {
			return OutcomeQueued, nil
		}
		switch info.State {
		case asynq.TaskStateCompleted, asynq.TaskStateArchived:
			err := c.inspector.DeleteTask(QueueAgent, id)
			if err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
				return "", fmt.Errorf("delete ended task %s: %w", id, err)
			}
		default:
			return busy, nil
		}
	}
	return "", fmt.Errorf("enqueue %s: the task id stayed taken after %d attempts", id, conflictAttempts)
}

// payloadDelivery returns the delivery id a task payload was written for.
func payloadDelivery(b []byte) string {
	var p struct {
		DeliveryID string `json:"delivery_id"`
	}
	if json.Unmarshal(b, &p) != nil {
		return ""
	}
	return p.DeliveryID
}
