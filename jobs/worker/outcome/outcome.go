// Package outcome names how a worker task ended: the one vocabulary of the
// worker's control flow, its run records, its texts for people and the
// outcome label of agentfix_jobs_total. Each outcome says whether it is
// final (asynq must not run the task again) or retried.
package outcome

// Outcome is how one attempt of a task ended. Its value is the metric
// label and the status of a run record.
type Outcome string

// The outcomes of agent jobs (fix and revise) that report a result.
const (
	// PROpened: a pull request was opened, ready for review or a draft.
	PROpened Outcome = "pr_opened"
	// DraftOpened: an incomplete change (autosubmitted) was opened as a
	// draft.
	DraftOpened Outcome = "draft_opened"
	// PRUpdated: a commit was pushed to the open pull request.
	PRUpdated Outcome = "pr_updated"
	// NoChanges: the agent finished without a change.
	NoChanges Outcome = "no_changes"
	// WorkflowsRefused: the change touches workflows, which the
	// repository does not let the bot change.
	WorkflowsRefused Outcome = "workflows_refused"
	// SymlinksRefused: the change holds symbolic links the bot never
	// pushes (under .github/, or pointing outside the repository).
	SymlinksRefused Outcome = "symlinks_refused"
	// Failed: the job ended without a pull request for a reason it told
	// the requester (the agent failed, a push was refused, it gave up
	// after its last attempt).
	Failed Outcome = "failed"
	// SetupFailed: a setup command failed; the agent did not start.
	SetupFailed Outcome = "setup_failed"
	// ImageFailed: the image the job's environment names cannot be
	// pulled or used; the agent did not start.
	ImageFailed Outcome = "image_failed"
	// Cancelled: stopped by a person, a closed issue or a removed
	// installation.
	Cancelled Outcome = "cancelled"
)

// The outcomes of triggers that get no job, and of jobs that move.
const (
	// Unauthorized: the requester has no write access.
	Unauthorized Outcome = "unauthorized"
	// NotAllowed: the repository's allowed_users or allowed_teams leave
	// the requester out.
	NotAllowed Outcome = "not_allowed"
	// OverBudget: a daily or job budget is used up.
	OverBudget Outcome = "over_budget"
	// InvalidConfig: the repository's configuration cannot be used.
	InvalidConfig Outcome = "invalid_config"
	// Closed: the issue or pull request is closed or locked.
	Closed Outcome = "closed"
	// NotBotsPR: a round was asked for on a pull request the bot did not
	// open.
	NotBotsPR Outcome = "not_bots_pr"
	// NoIssue: the bot's pull request names no issue it fixes.
	NoIssue Outcome = "no_issue"
	// Moved: a fix trigger on an issue with an open bot pull request
	// became a round on that pull request.
	Moved Outcome = "moved"
	// Kept: a command was kept for the next round of a pull request.
	Kept Outcome = "kept"
	// Invalid: the task cannot be run at all (a bad payload, an unknown
	// installation, an issue that is a pull request).
	Invalid Outcome = "invalid"
)

// The outcomes of interactive tasks.
const (
	Acknowledged    Outcome = "acknowledged"
	Replied         Outcome = "replied"
	Stopped         Outcome = "stopped"
	RateLimited     Outcome = "rate_limited"
	NothingKept     Outcome = "nothing_kept"
	FollowUpStarted Outcome = "follow_up_started"
)

// The outcomes asynq retries.
const (
	// Error: the attempt failed (GitHub, Redis, git); the task runs
	// again, and its last attempt reports Failed.
	Error Outcome = "error"
	// Interrupted: the worker shut down mid-job; the task runs again on
	// another worker and continues the job.
	Interrupted Outcome = "interrupted"
)

// Final reports whether the task is done for good: every outcome but
// Error and Interrupted.
func (o Outcome) Final() bool { return o != Error && o != Interrupted }

// Published reports whether a pull request has the job's change.
func (o Outcome) Published() bool { return o == PROpened || o == DraftOpened || o == PRUpdated }

// String returns the outcome's label.
func (o Outcome) String() string { return string(o) }
