package jobs

import (
	"encoding/json"
	"fmt"
)

// Version is the payload version this build writes and reads. A payload with
// another version is refused by Decode, so a worker never misreads a task
// written by a newer or older edge.
const Version = 1

// Repo identifies a repository as the webhook payload describes it.
type Repo struct {
	ID       int64  `json:"id"`
	Owner    string `json:"owner"`
	Name     string `json:"name"`
	FullName string `json:"full_name"`
	// CloneURL is the repository's clone_url (GitHub Enterprise and test
	// servers work unchanged); empty when the payload has none.
	CloneURL      string `json:"clone_url,omitempty"`
	DefaultBranch string `json:"default_branch,omitempty"`
	Private       bool   `json:"private,omitempty"`
}

// User is a GitHub account as a payload names it.
type User struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	// Type is "User", "Bot" or "Organization".
	Type string `json:"type"`
}

// TriggerKind says what a person did to ask the bot for something.
type TriggerKind string

// The trigger kinds.
const (
	// TriggerLabel is the trigger label added to an issue.
	TriggerLabel TriggerKind = "label"
	// TriggerIssueComment is a command in a comment on an issue or a PR.
	TriggerIssueComment TriggerKind = "issue_comment"
	// TriggerReview is a command in the body of a submitted PR review.
	TriggerReview TriggerKind = "pull_request_review"
	// TriggerReviewComment is a command in an inline PR review comment.
	TriggerReviewComment TriggerKind = "pull_request_review_comment"
)

// Trigger is the thing on GitHub that triggered a task: where to react with
// 👀 and what to reply to.
type Trigger struct {
	Kind TriggerKind `json:"kind"`
	// CommentID is the issue comment's id (TriggerIssueComment) or the review
	// comment's id (TriggerReviewComment).
	CommentID int64 `json:"comment_id,omitempty"`
	// ReviewID is the review's id (TriggerReview, and the review an inline
	// comment belongs to).
	ReviewID int64 `json:"review_id,omitempty"`
	// URL is the web address of the comment, review or issue.
	URL string `json:"url,omitempty"`
}

// Command is the slash command a comment carried.
type Command struct {
	// Verb is "" for a plain command (work, with Instructions), "stop",
	// "resume" or "help".
	Verb string `json:"verb,omitempty"`
	// Instructions is the free text after the command: the rest of its line
	// and the rest of the comment.
	Instructions string `json:"instructions,omitempty"`
}

// The command verbs besides plain work.
const (
	VerbStop = "stop"
	// VerbResume turns the bot's own rounds on its pull request (for
	// failing checks and merge conflicts) back on after a stop.
	VerbResume = "resume"
	VerbHelp   = "help"
)

// FixIssue is the payload of a fix task: make a PR for an issue. The worker
// turns it into a revise round when an open bot PR for the issue exists.
type FixIssue struct {
	V            int     `json:"v"`
	DeliveryID   string  `json:"delivery_id"`
	Installation int64   `json:"installation"`
	Repo         Repo    `json:"repo"`
	Number       int     `json:"number"`
	Trigger      Trigger `json:"trigger"`
	Requester    User    `json:"requester"`
	Instructions string  `json:"instructions,omitempty"`
}

// RevisePR is the payload of a revise task: another round on a PR whose
// author is a bot (the worker checks it is this App).
type RevisePR struct {
	V            int     `json:"v"`
	DeliveryID   string  `json:"delivery_id"`
	Installation int64   `json:"installation"`
	Repo         Repo    `json:"repo"`
	Number       int     `json:"number"`
	Trigger      Trigger `json:"trigger"`
	Requester    User    `json:"requester"`
	Instructions string  `json:"instructions,omitempty"`
	// Author is the PR's author as the payload names it.
	Author User `json:"author"`
	// FollowUps are the commands kept while earlier rounds ran, in the
	// order they came, when this is the follow-up round that answers them
	// all; Requester, Trigger and Instructions are then the first one's.
	FollowUps []KeptCommand `json:"follow_ups,omitempty"`
}

// Outcome is what the edge decided for a delivery; the notice task tells
// the people on GitHub.
type Outcome string

// The outcomes a notice carries.
const (
	// OutcomeQueued: the delivery's agent task was enqueued.
	OutcomeQueued Outcome = "queued"
	// OutcomeAlreadyWorking: a task for the issue is queued or running; the
	// notice replies "already working" with a link.
	OutcomeAlreadyWorking Outcome = "already_working"
	// OutcomeFollowUpKept: a revise task for the PR is queued or running; the
	// notice keeps the command for one follow-up round when it ends.
	OutcomeFollowUpKept Outcome = "follow_up_kept"
	// OutcomeNotBotsPR: a command on a PR a person opened; the notice replies
	// that the bot only revises its own PRs.
	OutcomeNotBotsPR Outcome = "not_bots_pr"
	// OutcomeStop: the command was stop; the interactive worker cancels.
	OutcomeStop Outcome = "stop"
	// OutcomeResume: the command was resume; the interactive worker turns
	// the pull request's automatic rounds back on.
	OutcomeResume Outcome = "resume"
	// OutcomeHelp: the command was help; the interactive worker replies.
	OutcomeHelp Outcome = "help"
)

// Notice is the payload of the notice task every accepted trigger delivery
// enqueues on the interactive queue: the 👀 and the reply the delivery needs.
type Notice struct {
	V            int     `json:"v"`
	DeliveryID   string  `json:"delivery_id"`
	Installation int64   `json:"installation"`
	Repo         Repo    `json:"repo"`
	Number       int     `json:"number"`
	IsPR         bool    `json:"is_pr"`
	Trigger      Trigger `json:"trigger"`
	Requester    User    `json:"requester"`
	Command      Command `json:"command"`
	// Author is the PR's author (IsPR only).
	Author  *User   `json:"author,omitempty"`
	Outcome Outcome `json:"outcome"`
	// AgentTaskID is the agent task the notice is about: the one enqueued
	// (OutcomeQueued) or the one already queued or running.
	AgentTaskID string `json:"agent_task_id,omitempty"`
}

// CancelReason says why running work must stop.
type CancelReason string

// The cancel reasons.
const (
	CancelInstallationDeleted   CancelReason = "installation_deleted"
	CancelInstallationSuspended CancelReason = "installation_suspended"
	CancelRepositoriesRemoved   CancelReason = "repositories_removed"
	CancelIssueClosed           CancelReason = "issue_closed"
)

// Cancel is the payload of a cancel task: stop the jobs of an installation,
// of some repositories, or of one issue, and drop cached clients.
type Cancel struct {
	V            int          `json:"v"`
	DeliveryID   string       `json:"delivery_id"`
	Installation int64        `json:"installation"`
	Reason       CancelReason `json:"reason"`
	// Repos narrows the cancel to these repositories; empty means the whole
	// installation.
	Repos []Repo `json:"repos,omitempty"`
	// Number narrows it to one issue of the single repository in Repos.
	Number int `json:"number,omitempty"`
}

// Payload is the set of task payload types.
type Payload interface {
	FixIssue | RevisePR | Notice | Cancel | FollowUp | ChecksDone | BaseMoved | FixChecks | ResolveConflict
}

// Decode reads a task payload, refusing other versions and missing fields
// that every payload needs.
func Decode[P Payload](b []byte) (P, error) {
	var p P
	var head struct {
		V            int    `json:"v"`
		DeliveryID   string `json:"delivery_id"`
		Installation int64  `json:"installation"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return p, fmt.Errorf("decode %T payload: %w", p, err)
	}
	if head.V != Version {
		return p, fmt.Errorf("decode %T payload: version %d, this build reads version %d", p, head.V, Version)
	}
	if head.DeliveryID == "" || head.Installation == 0 {
		return p, fmt.Errorf("decode %T payload: delivery_id and installation are required", p)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("decode %T payload: %w", p, err)
	}
	return p, nil
}
