package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentfix/agentfix/internal/logattr"
)

// errTruncated marks a reply cut by the output token limit.
var errTruncated = errors.New("reply truncated by the output token limit")

// start seeds the history with the system and instance messages and writes
// the trajectory header.
func (a *Agent) start(task Task) error {
	if a.ran {
		return errors.New("the agent already ran; make a new one per run")
	}
	a.ran = true
	if err := task.validate(); err != nil {
		return err
	}
	a.started = a.now()
	a.tools = a.env.Tools()
	system, err := a.prompts.renderSystem(a.systemData())
	if err != nil {
		return err
	}
	instance, err := a.prompts.renderInstance(task)
	if err != nil {
		return err
	}
	a.messages = []Message{{Role: RoleSystem, Content: system}, {Role: RoleUser, Content: instance}}
	a.log.Info("run started", logattr.Repo, task.Repo, logattr.Issue, task.Issue, logattr.Model, a.model.Name())
	return a.traj.header(&Header{
		V: TrajectoryVersion, RunID: a.runID, Started: a.started, Model: a.model.Name(),
		TextMode: a.textMode, Task: task, Config: a.cfg, Tools: a.tools, Messages: a.messages,
	})
}

// systemData is what the system prompt shows: the mode, the tools, the
// limits of the run and, if the Env tells them, of its commands.
func (a *Agent) systemData() SystemData {
	d := SystemData{Workspace: Workspace, TextMode: a.textMode, Tools: a.tools,
		MaxSteps: a.cfg.MaxSteps, MaxDuration: a.cfg.MaxDuration, OutputCap: a.cfg.ObservationCap}
	if e, ok := a.env.(interface{ CommandLimits() CommandLimits }); ok {
		l := e.CommandLimits()
		d.CommandTimeout = l.Timeout
		if l.OutputCap > 0 {
			d.OutputCap = min(d.OutputCap, l.OutputCap)
		}
	}
	return d
}

// errTimeLimit is the cause of the run context's deadline.
var errTimeLimit = errors.New("the run's time limit")

// timeLimit returns the context the model and the Env work under: ctx with
// a deadline at the end of the time limit, if there is one.
func (a *Agent) timeLimit(ctx context.Context) (context.Context, context.CancelFunc) {
	if a.cfg.MaxDuration <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, a.cfg.MaxDuration, errTimeLimit) // the run just started
}

// timedOut reports a run whose deadline fired (mid-query or mid-command,
// however that surfaced) as the time limit reached, unless it submitted.
// The deadline fired, so at least MaxDuration passed, whatever the clock
// says.
func (a *Agent) timedOut(run context.Context, end error) error {
	var sub *submitted
	if errors.As(end, &sub) || !errors.Is(context.Cause(run), errTimeLimit) {
		return end
	}
	elapsed := max(a.now().Sub(a.started), a.cfg.MaxDuration)
	return &limitsExceeded{fmt.Sprintf("time limit reached: %s elapsed of %s", elapsed.Round(time.Millisecond), a.cfg.MaxDuration)}
}

// checkLimits runs before each query: a done ctx, then the limits.
func (a *Agent) checkLimits(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c := a.cfg
	switch elapsed := a.now().Sub(a.started); {
	case c.MaxSteps > 0 && a.steps >= c.MaxSteps:
		return &limitsExceeded{fmt.Sprintf("step limit reached: %d of %d steps", a.steps, c.MaxSteps)}
	case c.MaxCostUSD > 0 && a.costUSD >= c.MaxCostUSD:
		return &limitsExceeded{fmt.Sprintf("cost limit reached: $%.4f spent of $%.2f", a.costUSD, c.MaxCostUSD)}
	case c.MaxDuration > 0 && elapsed >= c.MaxDuration:
		return &limitsExceeded{fmt.Sprintf("time limit reached: %s elapsed of %s", elapsed.Round(1e6), c.MaxDuration)}
	case c.MaxTokens > 0 && a.usage.Total() >= c.MaxTokens:
		return &limitsExceeded{fmt.Sprintf("token limit reached: %d of %d tokens", a.usage.Total(), c.MaxTokens)}
	}
	return nil
}

// account adds one reply's usage and cost to the step and the totals.
func (a *Agent) account(s *Step, r Reply) {
	s.FinishReason = r.FinishReason
	s.Usage, s.CostUSD = r.Usage, r.CostUSD
	a.usage = a.usage.Add(r.Usage)
	a.costUSD += r.CostUSD
}

// add appends a message to the history and to the step's record.
func (a *Agent) add(s *Step, m Message) {
	a.messages = append(a.messages, m)
	s.Messages = append(s.Messages, m)
}

// actions turns a reply into the calls to run; a truncated reply is never
// run, even when its cut-off tool calls happen to parse, and a reply
// without any action is malformed (nothing would answer it).
func (a *Agent) actions(r Reply) ([]ToolCall, error) {
	if r.FinishReason == FinishLength {
		return nil, errTruncated
	}
	calls, err := a.env.Actions(r.Message)
	if err == nil && len(calls) == 0 {
		return nil, &FormatError{Msg: "the reply has no action"}
	}
	return calls, err
}

// requery answers a reply that cannot be used (malformed, or truncated) with
// the format-error or truncation prompt, so the next query may correct it.
// A truncation is reported as such, not as a format error, but it counts
// toward the same limit of unusable replies in a row: a model that keeps
// running into its output limit would otherwise loop until the step limit.
func (a *Agent) requery(s *Step, reply Message, err error) error {
	var fe *FormatError
	truncated := errors.Is(err, errTruncated)
	if !truncated && !errors.As(err, &fe) {
		return &envError{err: fmt.Errorf("parse actions: %w", err)}
	}
	a.badReplies++
	s.FormatError = err.Error()
	if a.badReplies >= a.cfg.MaxFormatErrors {
		return &repeatedFormatError{count: a.badReplies, last: s.FormatError}
	}
	d := FormatErrorData{TextMode: a.textMode, Tools: a.tools, Count: a.badReplies, Max: a.cfg.MaxFormatErrors}
	var text string
	if truncated {
		text, err = a.prompts.renderTruncated(d)
	} else {
		d.Error = fe.Msg
		text, err = a.prompts.renderFormatError(d)
	}
	if err != nil {
		return err
	}
	if len(reply.ToolCalls) == 0 {
		a.add(s, Message{Role: RoleUser, Content: text})
		return nil
	}
	// Tool calling needs every call answered before the next user turn.
	for _, c := range reply.ToolCalls {
		a.add(s, Message{Role: RoleTool, Content: text, ToolCallID: c.ID})
	}
	return nil
}

// observe appends one observation, and the note after it: a tool result
// answering the call in tool mode, a user message in text mode (the reply
// had no tool calls).
func (a *Agent) observe(s *Step, reply Message, call ToolCall, obs Observation, note string) error {
	text, err := a.prompts.renderObservation(ObservationData{Output: obs.Output, Cap: a.cfg.ObservationCap, Note: note})
	if err != nil {
		return err
	}
	if len(reply.ToolCalls) == 0 {
		a.add(s, Message{Role: RoleUser, Content: text})
	} else {
		a.add(s, Message{Role: RoleTool, Content: text, ToolCallID: call.ID})
	}
	return nil
}

// note renders the harness's note for the end of a step: the same action
// repeated RepeatNote times or more, and once each, 80% of the steps or of
// the time used (as the step started: the note costs no clock reading).
// Empty when none is due.
func (a *Agent) note(repeats int, stepStarted time.Time) (string, error) {
	d := NoteData{TextMode: a.textMode}
	if repeats >= RepeatNote {
		d.Repeats, d.RepeatsLeft = repeats, RepeatStop-repeats
	}
	if c := a.cfg; c.MaxSteps > 0 && !a.notedSteps && a.steps*5 >= c.MaxSteps*4 {
		a.notedSteps = true
		d.Steps, d.MaxSteps, d.StepsLeft = a.steps, c.MaxSteps, c.MaxSteps-a.steps
	}
	if c, elapsed := a.cfg, stepStarted.Sub(a.started); c.MaxDuration > 0 && !a.notedTime && elapsed*5 >= c.MaxDuration*4 {
		a.notedTime = true
		d.TimeLeft, d.MaxDuration = max(c.MaxDuration-elapsed, 0), c.MaxDuration
	}
	if d.Repeats == 0 && d.MaxSteps == 0 && d.MaxDuration == 0 {
		return "", nil // nothing due: no template run
	}
	return a.prompts.renderNote(d)
}

// repetition counts the same action (tool and arguments, whatever the
// call's id and the spacing of the arguments' JSON) with the same
// observation in a row.
type repetition struct {
	name, args, output string
	count              int
}

// see records one action and its observation and returns how many times
// in a row, this one included, the same pair came.
func (r *repetition) see(call ToolCall, obs Observation) int {
	var b bytes.Buffer
	args := string(call.Arguments)
	if json.Compact(&b, call.Arguments) == nil {
		args = b.String()
	}
	if call.Name != r.name || args != r.args || obs.Output != r.output {
		*r = repetition{name: call.Name, args: args, output: obs.Output}
	}
	r.count++
	return r.count
}

func (a *Agent) stepStart(ctx context.Context) error {
	st := StepStart{Step: a.steps + 1, Elapsed: a.now().Sub(a.started), TotalUsage: a.usage, TotalCostUSD: a.costUSD}
	for _, h := range a.hooks {
		if h.OnStepStart != nil {
			if err := h.OnStepStart(ctx, st); err != nil {
				return fmt.Errorf("step start hook: %w", err)
			}
		}
	}
	return nil
}

func (a *Agent) stepDone(ctx context.Context, s Step) error {
	for _, h := range a.hooks {
		if h.OnStepDone != nil {
			if err := h.OnStepDone(ctx, s); err != nil {
				return fmt.Errorf("step done hook: %w", err)
			}
		}
	}
	return nil
}

// finish turns the error that ended the loop into the Result: the status,
// the patch of a submission or autosubmission, the totals; then writes the
// result record and calls OnRunDone.
func (a *Agent) finish(ctx context.Context, end error) (Result, error) {
	status, reason, summary := exit(ctx, end)
	res := Result{RunID: a.runID, Status: status, Reason: reason, Summary: summary,
		Steps: a.steps, Usage: a.usage, CostUSD: a.costUSD}
	switch {
	case status == Submitted:
		patch, err := a.diff(ctx)
		if err != nil {
			res.Status, res.Reason = Error, err.Error()
			if errors.Is(err, ErrEnvDead) {
				res.Status = EnvDead
			}
		}
		res.Patch = patch
	case autosubmits(status):
		patch, err := a.diff(ctx)
		switch {
		case err != nil:
			res.Reason += "; no autosubmission: " + err.Error()
		case patch != "":
			res.Status, res.Cause, res.Patch = Autosubmitted, status, patch
			res.Reason = string(status) + ": " + reason
		}
	}
	res.Ended = a.now()
	res.Duration = res.Ended.Sub(a.started)
	a.log.Info("run done", logattr.Outcome, res.Status, logattr.Reason, res.Reason,
		logattr.Step, res.Steps, logattr.CostUSD, res.CostUSD)
	var errs []error
	if err := a.traj.result(&res); err != nil {
		errs = append(errs, err)
	}
	for _, h := range a.hooks {
		if h.OnRunDone != nil {
			if err := h.OnRunDone(ctx, res); err != nil {
				errs = append(errs, fmt.Errorf("run done hook: %w", err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("finish run %s: %w", a.runID, err)
	}
	return res, nil
}

// diff takes the patch with a fresh, short context: the run's context may
// be done (a limit, or cancellation just after a submission).
func (a *Agent) diff(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.AutosubmitTimeout)
	defer cancel()
	patch, err := a.env.Diff(ctx)
	if err != nil {
		return "", fmt.Errorf("take diff: %w", err)
	}
	return patch, nil
}
