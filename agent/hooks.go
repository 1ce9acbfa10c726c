package agent

import (
	"context"
	"fmt"
	"time"
)

// Hooks are called by the loop at fixed points; any of them may be nil.
// An error from OnStepStart or OnStepDone ends the run: a *StopError with
// the status and reason it carries, any other error with status error (or
// cancelled when ctx is done). OnRunDone runs after the result record is
// written; its error is returned by Run alongside the complete Result.
// Hooks run on the loop's goroutine: a slow hook slows the run.
type Hooks struct {
	// OnStepStart runs before each model query, after the limits passed.
	OnStepStart func(ctx context.Context, s StepStart) error
	// OnStepDone runs after each step was appended to the trajectory,
	// including the step that ends the run (its error is then logged).
	OnStepDone func(ctx context.Context, s Step) error
	// OnRunDone runs once with the final result. Its ctx is Run's, which
	// is done after a cancellation: report with a fresh context.
	OnRunDone func(ctx context.Context, r Result) error
}

// StepStart is what OnStepStart receives: the step about to run and the
// totals so far.
type StepStart struct {
	Step         int
	Elapsed      time.Duration
	TotalUsage   Usage
	TotalCostUSD float64
}

// StopError is the error a hook returns to end the run with a chosen status
// and reason, e.g. a budget hook returns
// &StopError{Status: LimitsExceeded, Reason: "repository daily budget spent"}
// and a stop hook &StopError{Status: Cancelled, Reason: "stopped by @alice"}.
// Cancelled skips autosubmission like a cancelled context; the statuses of a
// limit or an error autosubmit a non-empty diff. Submitted and
// Autosubmitted (or an unknown status) cannot be chosen: the run then ends
// with status error.
type StopError struct {
	Status ExitStatus
	Reason string
}

func (e *StopError) Error() string { return fmt.Sprintf("stop run (%s): %s", e.Status, e.Reason) }
