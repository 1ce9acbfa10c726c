package jobs

import (
	"context"
	"fmt"

	"github.com/hibiken/asynq"
)

// TypeFollowUp is the interactive task that starts the follow-up round of
// a pull request once its revise task has ended: the commands kept while
// the task ran become one new revise task (DESIGN.md §4). It exists
// because the ending task still holds the revise task id while its handler
// runs, so the handler cannot enqueue the next round itself.
const TypeFollowUp = "followup"

// KeptCommand is a command that came while a revise task for the same pull
// request was queued or running, kept for the follow-up round.
type KeptCommand struct {
	DeliveryID   string  `json:"delivery_id"`
	Requester    User    `json:"requester"`
	Trigger      Trigger `json:"trigger"`
	Instructions string  `json:"instructions,omitempty"`
}

// FollowUp is the payload of a follow-up task. DeliveryID is the delivery
// that wrote it (the ended round's, or the kept command's); the follow-up
// round it starts has the delivery id FollowUpDeliveryID(DeliveryID).
type FollowUp struct {
	V            int    `json:"v"`
	DeliveryID   string `json:"delivery_id"`
	Installation int64  `json:"installation"`
	Repo         Repo   `json:"repo"`
	// Number is the pull request.
	Number int  `json:"number"`
	Author User `json:"author"`
	// After is the delivery of the revise task that just ended: the
	// follow-up task waits until asynq has finished that task, so the task
	// id is free.
	After string `json:"after,omitempty"`
}

// FollowUpTaskID is the id of the follow-up task a delivery wrote.
func FollowUpTaskID(deliveryID string) string { return TypeFollowUp + ":" + deliveryID }

// FollowUpDeliveryID is the delivery id of the follow-up round that the
// follow-up task of deliveryID starts. It is deterministic, so a retried
// follow-up task recognises the round it enqueued.
func FollowUpDeliveryID(deliveryID string) string { return "followup-" + deliveryID }

// NewFollowUpTask returns the follow-up task of f, on the interactive
// queue. It sets f.V.
func NewFollowUpTask(f FollowUp) (*asynq.Task, error) {
	f.V = Version
	if err := checkTarget(f.DeliveryID, f.Installation, f.Repo, f.Number); err != nil {
		return nil, fmt.Errorf("follow-up task: %w", err)
	}
	return interactiveTask(TypeFollowUp, FollowUpTaskID(f.DeliveryID), f)
}

// SubmitFollowUp enqueues a follow-up task. It returns ErrDuplicate when
// the delivery's follow-up task is waiting or running already.
func (c *Client) SubmitFollowUp(ctx context.Context, f FollowUp) error {
	task, err := NewFollowUpTask(f)
	if err != nil {
		return err
	}
	return c.enqueueOnce(ctx, task, FollowUpTaskID(f.DeliveryID))
}

// EnqueueRevise enqueues the revise task for p alone, without a notice,
// under the conflict rule of SubmitRevise: it returns OutcomeQueued, or
// OutcomeFollowUpKept when another delivery's revise task for the pull
// request is queued or running. The worker uses it for follow-up rounds and
// for a fix trigger on an issue whose bot pull request is open.
func (c *Client) EnqueueRevise(ctx context.Context, p RevisePR) (Outcome, error) {
	task, err := NewReviseTask(p, c.maxDuration)
	if err != nil {
		return "", err
	}
	return c.enqueueAgent(ctx, task, ReviseTaskID(p.Repo.FullName, p.Number), p.DeliveryID, OutcomeFollowUpKept)
}
