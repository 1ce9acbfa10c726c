package admin

import (
	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/runs"
)

// statusView is a status as the pages show it: words for people, a tone
// for its colour and the recorded value (shown as a tooltip, and what the
// metrics and logs call it).
type statusView struct {
	Label string
	// Tone is "ok", "bad", "running" or "neutral".
	Tone string
	// Value is the status as recorded.
	Value string
}

// describedStatus is one entry of runStatuses and exitStatuses.
type describedStatus struct {
	value, label, tone string
}

// runStatuses are the statuses a run record can have: "running" while it
// runs, then the worker's outcome (package jobs/worker/outcome; a test
// checks every outcome is here), in the order the filter lists them.
var runStatuses = []describedStatus{
	{runs.StatusRunning, "Running", "running"},
	{"pr_opened", "Pull request opened", "ok"},
	{"draft_opened", "Draft pull request opened", "ok"},
	{"pr_updated", "Pull request updated", "ok"},
	{"no_changes", "No changes", "neutral"},
	{"workflows_refused", "Refused: changes workflows", "neutral"},
	{"symlinks_refused", "Refused: holds unsafe symbolic links", "neutral"},
	{"failed", "Failed", "bad"},
	{"setup_failed", "Setup failed", "bad"},
	{"image_failed", "Image unusable", "bad"},
	{"cancelled", "Cancelled", "neutral"},
	{"unauthorized", "Requester lacks write access", "neutral"},
	{"not_allowed", "Requester not allowed", "neutral"},
	{"over_budget", "Over budget", "neutral"},
	{"invalid_config", "Invalid repository configuration", "bad"},
	{"closed", "Issue or pull request closed", "neutral"},
	{"not_bots_pr", "Not the bot's pull request", "neutral"},
	{"no_issue", "Pull request names no issue", "neutral"},
	{"moved", "Moved to the open pull request", "neutral"},
	{"kept", "Kept for the next round", "neutral"},
	{"invalid", "Invalid task", "bad"},
	{"error", "Error, will be retried", "bad"},
	{runs.StatusInterrupted, "Interrupted, will resume", "bad"},
	// The outcomes of interactive tasks, which have no run record today.
	{"acknowledged", "Acknowledged", "neutral"},
	{"replied", "Replied", "neutral"},
	{"stopped", "Stopped", "neutral"},
	{"rate_limited", "Rate limited", "neutral"},
	{"nothing_kept", "Nothing kept", "neutral"},
	{"follow_up_started", "Follow-up started", "neutral"},
}

// exitStatuses are the agent's exit statuses (DESIGN.md §6).
var exitStatuses = []describedStatus{
	{string(agent.Submitted), "Submitted", "ok"},
	{string(agent.Autosubmitted), "Submitted automatically at a limit", "ok"},
	{string(agent.LimitsExceeded), "Limit reached", "bad"},
	{string(agent.FormatErrorExit), "Unusable model replies", "bad"},
	{string(agent.Stuck), "Stuck repeating an action", "bad"},
	{string(agent.ContextExceeded), "Context window full", "bad"},
	{string(agent.EnvDead), "Sandbox failed", "bad"},
	{string(agent.APIError), "Model provider failed", "bad"},
	{string(agent.ModelAuth), "Model credentials refused", "bad"},
	{string(agent.Error), "Error", "bad"},
	{string(agent.Cancelled), "Cancelled", "neutral"},
}

// describeStatus returns the view of a run record's status. An unknown
// status (a newer worker's) shows as recorded.
func describeStatus(s string) statusView { return describe(runStatuses, s) }

// describeExit returns the view of an agent exit status; the empty status
// (the agent did not end, or never ran) is a dash.
func describeExit(s string) statusView {
	if s == "" {
		return statusView{Label: "–", Tone: "neutral"}
	}
	return describe(exitStatuses, s)
}

func describe(table []describedStatus, s string) statusView {
	for _, d := range table {
		if d.value == s {
			return statusView{Label: d.label, Tone: d.tone, Value: s}
		}
	}
	return statusView{Label: s, Tone: "neutral", Value: s}
}
