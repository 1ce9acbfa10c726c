package agent

import (
	"context"
	"errors"
	"fmt"
)

// The interrupts: every way out of the loop is an error, and exit maps it
// to an exit status in one place, like mini-swe-agent's InterruptAgentFlow.
// Besides these types, the loop ends on a *StopError from a hook, on ctx's
// error, and on other errors (trajectory, hooks), which exit as error.
type (
	// submitted: the submit tool's final phase ran.
	submitted struct{ summary string }
	// limitsExceeded: a step, cost, time or token limit was reached.
	limitsExceeded struct{ reason string }
	// repeatedFormatError: too many malformed or truncated replies in a row.
	repeatedFormatError struct {
		count int
		last  string
	}
	// modelError: Model.Query failed (api_error; context_exceeded when it
	// wraps ErrContextExceeded, model_auth when it wraps ErrModelAuth).
	modelError struct{ err error }
	// envError: the Env failed (env_dead when it wraps ErrEnvDead).
	envError struct{ err error }
	// stuck: the same action gave the same observation RepeatStop times
	// in a row.
	stuck struct {
		count  int
		action string
	}
)

func (e *submitted) Error() string      { return "submitted" }
func (e *limitsExceeded) Error() string { return e.reason }
func (e *repeatedFormatError) Error() string {
	return fmt.Sprintf("%d unusable replies in a row; the last: %s", e.count, e.last)
}
func (e *modelError) Error() string { return "model: " + e.err.Error() }
func (e *modelError) Unwrap() error { return e.err }
func (e *envError) Error() string   { return "environment: " + e.err.Error() }
func (e *envError) Unwrap() error   { return e.err }
func (e *stuck) Error() string {
	return fmt.Sprintf("the same action gave the same observation %d times in a row: %s", e.count, e.action)
}

// exit maps the error that ended the loop to the run's exit status and
// reason, and the summary for submitted. A submission stands even when ctx
// was cancelled just after it; otherwise a done ctx means cancelled, however
// the cancellation surfaced (mid-query, mid-command, between steps).
func exit(ctx context.Context, err error) (status ExitStatus, reason, summary string) {
	var (
		sub  *submitted
		stop *StopError
		lim  *limitsExceeded
		fe   *repeatedFormatError
		st   *stuck
		me   *modelError
	)
	switch {
	case errors.As(err, &sub):
		return Submitted, "", sub.summary
	case ctx.Err() != nil:
		return Cancelled, context.Cause(ctx).Error(), ""
	case errors.As(err, &stop):
		if stop.Status != Cancelled && !autosubmits(stop.Status) {
			return Error, fmt.Sprintf("hook chose status %q, which a hook cannot choose: %s", stop.Status, stop.Reason), ""
		}
		return stop.Status, stop.Reason, ""
	case errors.As(err, &lim):
		return LimitsExceeded, lim.reason, ""
	case errors.As(err, &fe):
		return FormatErrorExit, fe.Error(), ""
	case errors.As(err, &st):
		return Stuck, st.Error(), ""
	case errors.Is(err, ErrContextExceeded):
		return ContextExceeded, err.Error(), ""
	case errors.Is(err, ErrModelAuth):
		return ModelAuth, err.Error(), ""
	case errors.As(err, &me):
		return APIError, err.Error(), ""
	case errors.Is(err, ErrEnvDead):
		return EnvDead, err.Error(), ""
	}
	return Error, err.Error(), ""
}

// autosubmits reports the statuses after which a non-empty diff is
// submitted anyway (SWE-agent's attempt_autosubmission_after_error).
func autosubmits(s ExitStatus) bool {
	switch s {
	case LimitsExceeded, FormatErrorExit, Stuck, ContextExceeded, EnvDead, APIError, ModelAuth, Error:
		return true
	}
	return false
}
