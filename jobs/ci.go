package jobs

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/hibiken/asynq"
)

// The tasks of the bot's automatic rounds: rounds on its own pull requests
// that nobody asked for, started when their checks fail (a ci round) or
// when the base branch moved and they no longer merge (a conflict round).
// The edge turns a check_suite or check_run delivery into a checks task and
// a push to a default branch into a basemoved task, on the interactive
// queue; those read GitHub, decide, and enqueue the round. A round runs
// under its pull request's revise task id (ReviseTaskID), so one round per
// pull request runs at a time, whoever asked for it, and a stop or a
// command on the pull request reaches it as it reaches a revise round.
const (
	// TypeChecks is the interactive task of a check_suite or check_run
	// delivery: it reads the checks of a pull request's head and starts a
	// ci round when they failed.
	TypeChecks = "checks"
	// TypeBaseMoved is the interactive task of a push to a default
	// branch: it looks for the bot's pull requests into that branch that no
	// longer merge and starts a conflict round on each.
	TypeBaseMoved = "basemoved"
	// TypeCI is the agent task of a ci round.
	TypeCI = "ci"
	// TypeConflict is the agent task of a conflict round.
	TypeConflict = "conflict"
)

// ChecksDone is the payload of a checks task: checks completed on HeadSHA,
// the head of the pull requests PRs (as the delivery lists them; the worker
// checks which are the bot's).
type ChecksDone struct {
	V            int    `json:"v"`
	DeliveryID   string `json:"delivery_id"`
	Installation int64  `json:"installation"`
	Repo         Repo   `json:"repo"`
	HeadSHA      string `json:"head_sha"`
	PRs          []int  `json:"prs"`
}

// BaseMoved is the payload of a basemoved task: Branch, a default branch,
// was pushed to After.
type BaseMoved struct {
	V            int    `json:"v"`
	DeliveryID   string `json:"delivery_id"`
	Installation int64  `json:"installation"`
	Repo         Repo   `json:"repo"`
	Branch       string `json:"branch"`
	After        string `json:"after"`
}

// FixChecks is the payload of a ci task: one round on the bot's pull
// request Number for the checks that failed on its head commit Head.
type FixChecks struct {
	V            int    `json:"v"`
	DeliveryID   string `json:"delivery_id"`
	Installation int64  `json:"installation"`
	Repo         Repo   `json:"repo"`
	Number       int    `json:"number"`
	// Author is the pull request's author, the App's bot.
	Author User   `json:"author"`
	Head   string `json:"head"`
	// Flaky are the checks that failed on Head and passed when they were
	// re-run: the round reports them and leaves them alone.
	Flaky []string `json:"flaky,omitempty"`
	// Round is the round's number among the pull request's automatic
	// rounds (ci and conflict rounds together).
	Round int `json:"round,omitempty"`
	// Requester is the App's bot: nobody asked for the round. It is
	// here, under the name every agent task's payload gives it, for the
	// worker's stop and sweep.
	Requester User `json:"requester"`
}

// ResolveConflict is the payload of a conflict task: one round on the
// bot's pull request Number, whose head commit Head no longer merges with
// BaseHead, the head of its base branch Base.
type ResolveConflict struct {
	V            int    `json:"v"`
	DeliveryID   string `json:"delivery_id"`
	Installation int64  `json:"installation"`
	Repo         Repo   `json:"repo"`
	Number       int    `json:"number"`
	Author       User   `json:"author"`
	Head         string `json:"head"`
	Base         string `json:"base"`
	BaseHead     string `json:"base_head"`
	// Round is the round's number, as in FixChecks.
	Round int `json:"round,omitempty"`
	// Requester is the App's bot, as in FixChecks.
	Requester User `json:"requester"`
}

// commitSHA is a full commit id.
var commitSHA = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// ChecksTaskID is the id of the checks task a delivery wrote.
func ChecksTaskID(deliveryID string) string { return TypeChecks + ":" + deliveryID }

// BaseMovedTaskID is the id of the basemoved task a delivery wrote.
func BaseMovedTaskID(deliveryID string) string { return TypeBaseMoved + ":" + deliveryID }

// CIDeliveryID is the delivery id of the ci round for the checks that
// failed on head: however many deliveries report them, the round's job is
// one.
func CIDeliveryID(head string) string { return "ci-" + head }

// ConflictDeliveryID is the delivery id of the conflict round of head
// against baseHead.
func ConflictDeliveryID(head, baseHead string) string { return "conflict-" + head + "-" + baseHead }

// NewChecksTask returns the checks task of p's delivery, on the
// interactive queue. It sets p.V.
func NewChecksTask(p ChecksDone) (*asynq.Task, error) {
	p.V = Version
	if err := checkTarget(p.DeliveryID, p.Installation, p.Repo, 1); err != nil {
		return nil, fmt.Errorf("checks task: %w", err)
	}
	if !commitSHA.MatchString(p.HeadSHA) {
		return nil, fmt.Errorf("checks task: head %q is not a full commit id", p.HeadSHA)
	}
	if len(p.PRs) == 0 {
		return nil, fmt.Errorf("checks task: no pull request")
	}
	for _, n := range p.PRs {
		if n <= 0 {
			return nil, fmt.Errorf("checks task: pull request number %d is not positive", n)
		}
	}
	return interactiveTask(TypeChecks, ChecksTaskID(p.DeliveryID), p)
}

// NewBaseMovedTask returns the basemoved task of p's delivery, on the
// interactive queue. It sets p.V.
func NewBaseMovedTask(p BaseMoved) (*asynq.Task, error) {
	p.V = Version
	if err := checkTarget(p.DeliveryID, p.Installation, p.Repo, 1); err != nil {
		return nil, fmt.Errorf("basemoved task: %w", err)
	}
	if p.Branch == "" || !commitSHA.MatchString(p.After) {
		return nil, fmt.Errorf("basemoved task: branch %q and commit %q are required", p.Branch, p.After)
	}
	return interactiveTask(TypeBaseMoved, BaseMovedTaskID(p.DeliveryID), p)
}

// NewCITask returns the ci task of p, on the agent queue under the pull
// request's revise task id, with a timeout of maxDuration plus
// AgentTimeoutMargin. It sets p.V.
func NewCITask(p FixChecks, maxDuration time.Duration) (*asynq.Task, error) {
	p.V = Version
	if err := checkTarget(p.DeliveryID, p.Installation, p.Repo, p.Number); err != nil {
		return nil, fmt.Errorf("ci task: %w", err)
	}
	if !commitSHA.MatchString(p.Head) {
		return nil, fmt.Errorf("ci task: head %q is not a full commit id", p.Head)
	}
	return agentTask(TypeCI, ReviseTaskID(p.Repo.FullName, p.Number), p, maxDuration)
}

// NewConflictTask returns the conflict task of p, like NewCITask. It sets
// p.V.
func NewConflictTask(p ResolveConflict, maxDuration time.Duration) (*asynq.Task, error) {
	p.V = Version
	if err := checkTarget(p.DeliveryID, p.Installation, p.Repo, p.Number); err != nil {
		return nil, fmt.Errorf("conflict task: %w", err)
	}
	if !commitSHA.MatchString(p.Head) || !commitSHA.MatchString(p.BaseHead) || p.Base == "" {
		return nil, fmt.Errorf("conflict task: head %q, base %q and base head %q are required", p.Head, p.Base, p.BaseHead)
	}
	return agentTask(TypeConflict, ReviseTaskID(p.Repo.FullName, p.Number), p, maxDuration)
}

// SubmitChecks enqueues a checks task. It returns ErrDuplicate when the
// delivery's checks task exists already.
func (c *Client) SubmitChecks(ctx context.Context, p ChecksDone) error {
	task, err := NewChecksTask(p)
	if err != nil {
		return err
	}
	return c.enqueueOnce(ctx, task, ChecksTaskID(p.DeliveryID))
}

// SubmitBaseMoved enqueues a basemoved task. It returns ErrDuplicate when
// the delivery's basemoved task exists already.
func (c *Client) SubmitBaseMoved(ctx context.Context, p BaseMoved) error {
	task, err := NewBaseMovedTask(p)
	if err != nil {
		return err
	}
	return c.enqueueOnce(ctx, task, BaseMovedTaskID(p.DeliveryID))
}

// EnqueueCI enqueues the ci round of p under the conflict rule of
// SubmitRevise: OutcomeQueued, or OutcomeFollowUpKept when another round
// of the pull request is queued or running (the caller then starts
// nothing).
func (c *Client) EnqueueCI(ctx context.Context, p FixChecks) (Outcome, error) {
	task, err := NewCITask(p, c.maxDuration)
	if err != nil {
		return "", err
	}
	return c.enqueueAgent(ctx, task, ReviseTaskID(p.Repo.FullName, p.Number), p.DeliveryID, OutcomeFollowUpKept)
}

// EnqueueConflict enqueues the conflict round of p, like EnqueueCI.
func (c *Client) EnqueueConflict(ctx context.Context, p ResolveConflict) (Outcome, error) {
	task, err := NewConflictTask(p, c.maxDuration)
	if err != nil {
		return "", err
	}
	return c.enqueueAgent(ctx, task, ReviseTaskID(p.Repo.FullName, p.Number), p.DeliveryID, OutcomeFollowUpKept)
}
