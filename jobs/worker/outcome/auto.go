package outcome

// The outcomes of the tasks that look for automatic rounds (checks that
// completed, a base branch that moved) and of the rounds that end before
// the agent runs.
const (
	// RoundQueued: an automatic round was queued on a pull request.
	RoundQueued Outcome = "round_queued"
	// Rerun: the failed jobs of the checks were re-run, to tell a flaky
	// check from a broken one before a round.
	Rerun Outcome = "rerun"
	// Flaky: the failed checks passed when re-run; nothing to fix.
	Flaky Outcome = "flaky"
	// LimitReached: the pull request had as many automatic rounds as
	// ci.max_rounds lets it.
	LimitReached Outcome = "limit_reached"
	// Skipped: nothing to do (checks still running or passing, the head
	// moved on, automatic rounds off or stopped, a person's commits).
	Skipped Outcome = "skipped"
)
