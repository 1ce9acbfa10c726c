package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/agentfix/agentfix/internal/logattr"
)

// Agent runs one task: it owns the history and the totals of that run. It
// is not safe for concurrent use, and Run may be called once.
type Agent struct {
	model    Model
	env      Env
	cfg      Config
	prompts  *Prompts
	hooks    []Hooks
	traj     *trajectoryWriter
	now      func() time.Time
	log      *slog.Logger
	runID    string
	textMode bool

	ran        bool
	tools      []ToolSpec
	messages   []Message // append-only: providers cache its prefix
	steps      int
	usage      Usage
	costUSD    float64
	started    time.Time
	badReplies int // malformed or truncated replies in a row
	repeats    repetition
	// notedSteps and notedTime: the 80% notes were given.
	notedSteps, notedTime bool
}

// Option configures an Agent.
type Option func(*Agent)

// WithConfig sets the limits and knobs (default DefaultConfig()).
func WithConfig(c Config) Option { return func(a *Agent) { a.cfg = c } }

// WithPrompts sets the prompt templates (default: the embedded ones).
func WithPrompts(p *Prompts) Option { return func(a *Agent) { a.prompts = p } }

// WithHooks adds hooks; several are called in the order given.
func WithHooks(h Hooks) Option { return func(a *Agent) { a.hooks = append(a.hooks, h) } }

// WithTrajectory appends the run's trajectory JSONL to w.
func WithTrajectory(w io.Writer) Option {
	return func(a *Agent) { a.traj = newTrajectoryWriter(w) }
}

// WithClock sets the clock used for the time limit and the records.
func WithClock(now func() time.Time) Option { return func(a *Agent) { a.now = now } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(a *Agent) { a.log = l } }

// WithRunID sets the run id (default: 16 random hex digits).
func WithRunID(id string) Option { return func(a *Agent) { a.runID = id } }

// New returns an agent that runs a task with model and env. A model that
// has a TextMode() bool method reporting true (agent/llm's models in text
// mode) gets the text-mode prompts, and its replies' actions come from the
// reply text (Env.Actions parses them); observations then go back as user
// messages instead of tool results.
func New(model Model, env Env, opts ...Option) (*Agent, error) {
	a := &Agent{model: model, env: env, cfg: DefaultConfig(), now: time.Now}
	for _, o := range opts {
		o(a)
	}
	if model == nil || env == nil {
		return nil, errors.New("new agent: model and env are required")
	}
	cfg, err := a.cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("new agent: %w", err)
	}
	a.cfg = cfg
	if a.prompts == nil {
		if a.prompts, err = ParsePrompts(Templates{}); err != nil {
			return nil, fmt.Errorf("new agent: %w", err)
		}
	}
	if a.runID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		a.runID = hex.EncodeToString(b[:])
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.log = a.log.With(logattr.RunID, a.runID)
	if m, ok := model.(interface{ TextMode() bool }); ok {
		a.textMode = m.TextMode()
	}
	return a, nil
}

// RunID returns the id of the agent's run.
func (a *Agent) RunID() string { return a.runID }

// Run works on task until the run ends and returns how it ended. Every way
// a run ends is a Result (see ExitStatus); the error is non-nil only when
// the run could not start (invalid task, prompt, trajectory header, a second
// call), or when writing the result record or OnRunDone failed, in which
// case the Result is still complete. The model and the Env work under a
// deadline of the time limit (Config.MaxDuration); the hooks and the
// autosubmission's diff get ctx, which outlives that deadline.
func (a *Agent) Run(ctx context.Context, task Task) (Result, error) {
	if err := a.start(task); err != nil {
		return Result{}, fmt.Errorf("start run %s: %w", a.runID, err)
	}
	run, cancel := a.timeLimit(ctx)
	defer cancel()
	var end error
	for end == nil {
		end = a.step(ctx, run)
	}
	return a.finish(ctx, a.timedOut(run, end))
}

// step is one turn of the loop: check the limits, query the model, run the
// actions (under run, the context with the time limit). Its error ends the
// run; exit maps it to the status.
func (a *Agent) step(ctx, run context.Context) error {
	if err := a.checkLimits(run); err != nil {
		return err
	}
	if err := a.stepStart(ctx); err != nil {
		return err
	}
	a.steps++
	s := Step{Step: a.steps, Started: a.now()}
	err := a.act(run, &s)
	s.Duration = a.now().Sub(s.Started)
	s.TotalUsage, s.TotalCostUSD = a.usage, a.costUSD
	if werr := a.traj.step(&s); werr != nil && err == nil {
		err = werr
	}
	if a.log.Enabled(ctx, slog.LevelDebug) {
		a.log.Debug("step done", logattr.Step, s.Step, logattr.Action, s.LastAction(), logattr.CostUSD, a.costUSD)
	}
	if herr := a.stepDone(ctx, s); herr != nil {
		if err == nil {
			return herr
		}
		a.log.Warn("step hook failed after the run ended", logattr.Step, s.Step, logattr.Err, herr)
	}
	return err
}

// act queries the model and answers its reply: runs the actions in order,
// one observation message each, or asks again after a reply it cannot use.
func (a *Agent) act(ctx context.Context, s *Step) error {
	t := a.now()
	reply, err := a.model.Query(ctx, a.messages[:len(a.messages):len(a.messages)], a.tools)
	s.QueryTime = a.now().Sub(t)
	if err != nil {
		return &modelError{err: fmt.Errorf("query %s: %w", a.model.Name(), err)}
	}
	if reply.Message.Role == "" {
		reply.Message.Role = RoleAssistant
	}
	a.account(s, reply)
	a.add(s, reply.Message)
	calls, err := a.actions(reply)
	if err != nil {
		return a.requery(s, reply.Message, err)
	}
	a.badReplies = 0
	t = a.now()
	defer func() { s.ExecTime = a.now().Sub(t) }()
	for i, call := range calls {
		if err := a.execute(ctx, s, reply.Message, call, i == len(calls)-1); err != nil {
			return err
		}
	}
	return nil
}

// execute runs one action and appends its observation, with the harness's
// note after the step's last one; a submission or a model stuck repeating
// itself ends the run.
func (a *Agent) execute(ctx context.Context, s *Step, reply Message, call ToolCall, last bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.Actions = append(s.Actions, call)
	obs, err := a.env.Execute(ctx, call)
	if err != nil {
		return &envError{err: fmt.Errorf("execute %s: %w", call.Name, err)}
	}
	s.Observations = append(s.Observations, obs)
	repeats := a.repeats.see(call, obs)
	var note string
	if last && !obs.Submitted && repeats < RepeatStop {
		if note, err = a.note(repeats, s.Started); err != nil {
			return err
		}
	}
	if err := a.observe(s, reply, call, obs, note); err != nil {
		return err
	}
	switch {
	case obs.Submitted:
		return &submitted{summary: obs.Summary}
	case repeats >= RepeatStop:
		return &stuck{count: repeats, action: call.Brief(120)}
	}
	return nil
}
