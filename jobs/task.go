package jobs

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hibiken/asynq"
)

// The queues. Interactive tasks take seconds and have their own worker
// slots, so acknowledgements never wait behind agent jobs.
const (
	QueueInteractive = "interactive"
	QueueAgent       = "agent"
)

// The task types (asynq type names).
const (
	TypeFix    = "fix"
	TypeRevise = "revise"
	TypeNotice = "notice"
	TypeCancel = "cancel"
)

// Task options. An agent task may run for the job's maximum duration plus
// AgentTimeoutMargin (clone, setup, push and reporting); asynq's default of 30
// minutes would cut jobs short. A finished agent task is kept for
// AgentRetention so a redelivery of its trigger is recognised (§4: it is
// deleted when a new trigger arrives).
const (
	AgentMaxRetry       = 2
	AgentTimeoutMargin  = 15 * time.Minute
	AgentRetention      = 24 * time.Hour
	InteractiveMaxRetry = 5
	InteractiveTimeout  = 2 * time.Minute
)

// FixTaskID is the id of the fix task for issue n of repository fullName
// ("owner/repo"); there is at most one per issue. Names are compared without
// case, as GitHub does.
func FixTaskID(fullName string, n int) string {
	return fmt.Sprintf("%s:%s#%d", TypeFix, strings.ToLower(fullName), n)
}

// ReviseTaskID is the id of the revise task for PR n of repository fullName.
func ReviseTaskID(fullName string, n int) string {
	return fmt.Sprintf("%s:%s#%d", TypeRevise, strings.ToLower(fullName), n)
}

// NoticeTaskID is the id of the notice task of a delivery.
func NoticeTaskID(deliveryID string) string { return TypeNotice + ":" + deliveryID }

// CancelTaskID is the id of the cancel task of a delivery.
func CancelTaskID(deliveryID string) string { return TypeCancel + ":" + deliveryID }

// NewFixTask returns the fix task for p, on the agent queue, with a timeout of
// maxDuration plus AgentTimeoutMargin. It sets p.V.
func NewFixTask(p FixIssue, maxDuration time.Duration) (*asynq.Task, error) {
	p.V = Version
	if err := checkTarget(p.DeliveryID, p.Installation, p.Repo, p.Number); err != nil {
		return nil, fmt.Errorf("fix task: %w", err)
	}
	return agentTask(TypeFix, FixTaskID(p.Repo.FullName, p.Number), p, maxDuration)
}

// NewReviseTask returns the revise task for p, on the agent queue, with a
// timeout of maxDuration plus AgentTimeoutMargin. It sets p.V.
func NewReviseTask(p RevisePR, maxDuration time.Duration) (*asynq.Task, error) {
	p.V = Version
	if err := checkTarget(p.DeliveryID, p.Installation, p.Repo, p.Number); err != nil {
		return nil, fmt.Errorf("revise task: %w", err)
	}
	return agentTask(TypeRevise, ReviseTaskID(p.Repo.FullName, p.Number), p, maxDuration)
}

// NewNoticeTask returns the notice task of n's delivery, on the interactive
// queue. It sets n.V.
func NewNoticeTask(n Notice) (*asynq.Task, error) {
	n.V = Version
	if err := checkTarget(n.DeliveryID, n.Installation, n.Repo, n.Number); err != nil {
		return nil, fmt.Errorf("notice task: %w", err)
	}
	if n.Outcome == "" {
		return nil, fmt.Errorf("notice task: outcome is required")
	}
	return interactiveTask(TypeNotice, NoticeTaskID(n.DeliveryID), n)
}

// NewCancelTask returns the cancel task of c's delivery, on the interactive
// queue. It sets c.V.
func NewCancelTask(c Cancel) (*asynq.Task, error) {
	c.V = Version
	switch {
	case c.DeliveryID == "" || c.Installation == 0 || c.Reason == "":
		return nil, fmt.Errorf("cancel task: delivery id, installation and reason are required")
	case c.Number != 0 && len(c.Repos) != 1:
		return nil, fmt.Errorf("cancel task: an issue number needs exactly one repository, got %d", len(c.Repos))
	}
	return interactiveTask(TypeCancel, CancelTaskID(c.DeliveryID), c)
}

func agentTask(typ, id string, payload any, maxDuration time.Duration) (*asynq.Task, error) {
	if maxDuration <= 0 {
		return nil, fmt.Errorf("%s task %s: max duration must be positive, got %s", typ, id, maxDuration)
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("%s task %s: %w", typ, id, err)
	}
	return asynq.NewTask(typ, b,
		asynq.TaskID(id),
		asynq.Queue(QueueAgent),
		asynq.Timeout(maxDuration+AgentTimeoutMargin),
		asynq.MaxRetry(AgentMaxRetry),
		asynq.Retention(AgentRetention),
	), nil
}

func interactiveTask(typ, id string, payload any) (*asynq.Task, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("%s task %s: %w", typ, id, err)
	}
	return asynq.NewTask(typ, b,
		asynq.TaskID(id),
		asynq.Queue(QueueInteractive),
		asynq.Timeout(InteractiveTimeout),
		asynq.MaxRetry(InteractiveMaxRetry),
	), nil
}

func checkTarget(deliveryID string, installation int64, repo Repo, number int) error {
	switch {
	case deliveryID == "":
		return fmt.Errorf("delivery id is required")
	case installation == 0:
		return fmt.Errorf("installation is required")
	case repo.FullName == "" || !strings.Contains(repo.FullName, "/"):
		return fmt.Errorf("repository full name owner/repo is required, got %q", repo.FullName)
	case number <= 0:
		return fmt.Errorf("issue or PR number must be positive, got %d", number)
	}
	return nil
}
