package agent

import (
	"errors"
	"fmt"
	"time"
)

// Config holds the limits of a run and the knobs of the loop. A zero limit
// means no limit of that kind, but a run needs a step or a time limit.
type Config struct {
	// MaxSteps bounds the number of model queries.
	MaxSteps int `json:"max_steps"`
	// MaxCostUSD bounds the money spent on model calls.
	MaxCostUSD float64 `json:"max_cost_usd"`
	// MaxDuration bounds the wall time of the run.
	MaxDuration time.Duration `json:"max_duration_ns"`
	// MaxTokens bounds the tokens of all model calls (input, output and
	// cache); the budget that still works for an unpriced model.
	MaxTokens int64 `json:"max_tokens,omitempty"`
	// MaxFormatErrors is how many malformed or truncated replies in a row
	// end the run (format_error). Zero selects DefaultMaxFormatErrors.
	MaxFormatErrors int `json:"max_format_errors"`
	// ObservationCap is the most characters of one observation shown to
	// the model; longer output keeps its head and tail. Zero selects
	// DefaultObservationCap.
	ObservationCap int `json:"observation_cap"`
	// AutosubmitTimeout bounds taking the diff when a limit or an error
	// ends the run. Zero selects DefaultAutosubmitTimeout.
	AutosubmitTimeout time.Duration `json:"autosubmit_timeout_ns"`
}

// Defaults of Config; the limits follow DESIGN.md §3.
const (
	DefaultMaxSteps          = 75
	DefaultMaxCostUSD        = 3.00
	DefaultMaxDuration       = 45 * time.Minute
	DefaultMaxFormatErrors   = 3
	DefaultObservationCap    = 20000
	DefaultAutosubmitTimeout = 30 * time.Second
)

// The same action with the same observation RepeatNote times in a row gets
// a note to change approach; RepeatStop times ends the run as stuck.
const (
	RepeatNote = 3
	RepeatStop = 5
)

// DefaultConfig returns the operator defaults of DESIGN.md §3.
func DefaultConfig() Config {
	return Config{
		MaxSteps:          DefaultMaxSteps,
		MaxCostUSD:        DefaultMaxCostUSD,
		MaxDuration:       DefaultMaxDuration,
		MaxFormatErrors:   DefaultMaxFormatErrors,
		ObservationCap:    DefaultObservationCap,
		AutosubmitTimeout: DefaultAutosubmitTimeout,
	}
}

// withDefaults fills the zero knobs and validates the limits.
func (c Config) withDefaults() (Config, error) {
	if c.MaxFormatErrors == 0 {
		c.MaxFormatErrors = DefaultMaxFormatErrors
	}
	if c.ObservationCap == 0 {
		c.ObservationCap = DefaultObservationCap
	}
	if c.AutosubmitTimeout == 0 {
		c.AutosubmitTimeout = DefaultAutosubmitTimeout
	}
	var errs []error
	if c.MaxSteps < 0 {
		errs = append(errs, fmt.Errorf("max steps %d is negative", c.MaxSteps))
	}
	if c.MaxCostUSD < 0 {
		errs = append(errs, fmt.Errorf("max cost %.2f USD is negative", c.MaxCostUSD))
	}
	if c.MaxDuration < 0 {
		errs = append(errs, fmt.Errorf("max duration %s is negative", c.MaxDuration))
	}
	if c.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("max tokens %d is negative", c.MaxTokens))
	}
	if c.MaxFormatErrors < 0 {
		errs = append(errs, fmt.Errorf("max format errors %d is negative", c.MaxFormatErrors))
	}
	if c.ObservationCap < 100 {
		errs = append(errs, fmt.Errorf("observation cap %d is below 100 characters", c.ObservationCap))
	}
	if c.AutosubmitTimeout < 0 {
		errs = append(errs, fmt.Errorf("autosubmit timeout %s is negative", c.AutosubmitTimeout))
	}
	if c.MaxSteps == 0 && c.MaxDuration == 0 {
		errs = append(errs, errors.New("a run needs a step limit or a time limit"))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("agent config: %w", err)
	}
	return c, nil
}
