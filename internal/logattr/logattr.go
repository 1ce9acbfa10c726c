// Package logattr holds the slog attribute keys every package logs with, so a
// field has one name across the edge, the worker and the agent. It imports
// nothing from the project and may be imported by any package.
package logattr

// Attribute keys for log/slog records.
const (
	DeliveryID     = "delivery_id"
	Event          = "event"
	Action         = "action"
	InstallationID = "installation_id"
	Repo           = "repo"
	Issue          = "issue"
	PR             = "pr"
	JobID          = "job_id"
	RunID          = "run_id"
	Step           = "step"
	Queue          = "queue"
	Task           = "task"
	Sender         = "sender"
	Outcome        = "outcome"
	Err            = "err"

	// Keys of outgoing HTTP requests (GitHub API calls and their retries).
	Method  = "method"
	Path    = "path"
	Status  = "status"
	Attempt = "attempt"
	Wait    = "wait"
	Reason  = "reason"

	// Keys of sandboxed commands.
	Sandbox  = "sandbox"
	Command  = "command"
	ExitCode = "exit_code"
	Duration = "duration"

	// Keys of agent runs and model calls.
	Model   = "model"
	CostUSD = "cost_usd"
	// Keys of the GitHub App's setup and of its webhook deliveries as
	// GitHub lists them (a delivery's GUID is DeliveryID).
	AppID          = "app_id"
	File           = "file"
	HookDeliveryID = "hook_delivery_id"
)
