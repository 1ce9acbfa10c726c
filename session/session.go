// Package session is the one run path of agentfix, shared by the worker
// and `bot fix`: given a working tree, a way to build its sandbox, a model,
// the repository's run settings and hooks, Run builds the sandbox, runs the
// setup commands within their total deadline, builds the agent's tools and
// runs the agent, and returns its result with what the harness saw of the
// review. Everything around a run — where the working tree comes from,
// GitHub, budgets, the terminal — is the caller's, and reaches in only
// through Options and Hooks.
package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/devcontainer"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// DefaultSetupTimeout bounds a run's setup commands together when
// Settings.SetupTimeout is 0.
const DefaultSetupTimeout = 10 * time.Minute

// Settings are what a run does in one repository: the repository's
// configuration after the operator's limits.
type Settings struct {
	// Setup are the setup commands, run in order with network before the
	// agent; the first that fails ends the run with a *SetupError.
	Setup []string
	// SetupCommit, when set, is the commit whose tree setup runs on: the
	// default branch's head, so that a round on a branch the agent wrote
	// runs only setup files people with write access wrote. The working
	// tree's own files are put back after setup (WorkTree.WithTree).
	SetupCommit string
	// SetupTimeout bounds the setup commands together
	// (DefaultSetupTimeout).
	SetupTimeout time.Duration
	// Test is the repository's test command, run at review; "" for none.
	Test string
	// TestTimeout bounds each run of it (the sandbox's default when 0).
	TestTimeout time.Duration
	// Limits are the agent's limits (steps, cost, time).
	Limits agent.Config
	// AllowWorkflowChanges lets the change touch .github/workflows/.
	AllowWorkflowChanges bool
	// NestedInstructions are the AGENTS.md files of subdirectories
	// (Instructions.Nested); the repository-wide one goes in the Task.
	NestedInstructions map[string]string
	// Image is image: of .github/agent-fix.yml, or "".
	Image string
	// Devcontainer and DevcontainerErr are what ReadDevcontainer returned
	// for the default branch: its image, lifecycle commands (run as setup
	// before Setup) and environment.
	Devcontainer    *devcontainer.Config
	DevcontainerErr error
	// SaveSetupCache lets the caches setup filled be kept for the next job
	// of the repository: set it only when setup ran the default branch's
	// own files (SetupCommit, or a fix on the default branch's head).
	SaveSetupCache bool
}

// SandboxFactory builds the run's sandbox for its working copy and cache
// (o.Workspace, o.Cache and o.Logger are set; the factory adds the kind and
// the operator's limits).
type SandboxFactory func(o workspace.Options) (tools.Sandbox, error)

// Hooks let the caller follow a run. Every field may be nil.
type Hooks struct {
	// OnEnvironment is called once the environment is chosen and its
	// image pulled, before the sandbox is built.
	OnEnvironment func(ctx context.Context, env Environment)
	// OnSetup is called before each setup command.
	OnSetup func(ctx context.Context, command string)
	// OnSetupDone is called after each setup command that ran.
	OnSetupDone func(ctx context.Context, command string, res workspace.Result)
	// OnAgentStart is called once the agent is about to take its first
	// step.
	OnAgentStart func(ctx context.Context)
	// Agent are the loop's hooks, called in order (progress, stop, budgets).
	Agent []agent.Hooks
}

// Options are one run.
type Options struct {
	// WorkTree and Sandbox are required: the sandbox is built for the
	// tree, the run's working copy, whose private git dir the sandbox
	// never sees.
	WorkTree *workspace.WorkTree
	Sandbox  SandboxFactory
	// ScratchDir is where the fresh checkouts of the test command's runs
	// go (default: the system's temporary directory).
	ScratchDir string
	// Images pulls the images an environment names (nil: a sandbox that
	// pulls them itself gets the reference; see Environment).
	Images Images
	// OperatorImage is the operator's AGENTFIX_SANDBOX_IMAGE, and
	// ImageOverride an image named for this run (bot fix --image), which
	// wins over every other source.
	OperatorImage, ImageOverride string
	// SetupCache keeps warm setup caches between jobs of a repository;
	// nil keeps none.
	SetupCache SetupCache
	// Baselines keeps the base commit's test runs between jobs; nil keeps
	// none.
	Baselines BaselineCache
	// Model answers the agent. Required.
	Model    agent.Model
	Settings Settings
	Task     agent.Task
	// RunID names the run in its trajectory and logs.
	RunID string
	// Trajectory receives the trajectory JSONL; nil writes none.
	Trajectory io.Writer
	Hooks      Hooks
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger

	env *environment // set by Run
}

// Review is what the harness saw of the two-phase submission: how many
// review messages the agent got (of how many stages), the last result of
// the repository's test command and whether it ran on the final change,
// and the evidence of that run (baseline, regression proof, flags).
type Review struct {
	Rounds      int               `json:"rounds"`
	Stages      int               `json:"stages,omitempty"`
	Test        *tools.TestResult `json:"test,omitempty"`
	TestedFinal bool              `json:"tested_final,omitempty"`
	Verdict     *tools.Verdict    `json:"verdict,omitempty"`
}

// TestFailed reports whether the repository's test command failed on the
// change as last reviewed, for a reason the change may own: a run whose
// only failures also fail on the base commit has not failed.
func (r Review) TestFailed() bool {
	if r.Test == nil || !r.Test.TimedOut && r.Test.ExitCode == 0 {
		return false
	}
	return r.Verdict == nil || r.Verdict.Comparison == nil || !r.Verdict.Comparison.OnlyPreexisting()
}

// Result is how a run ended.
type Result struct {
	Agent       agent.Result
	Review      Review
	Environment Environment
}

// SetupError is a setup command that failed or timed out: the run ended
// before the agent started.
type SetupError struct {
	Command string
	Result  workspace.Result
}

func (e *SetupError) Error() string {
	if e.Result.TimedOut {
		return fmt.Sprintf("setup command %q timed out", e.Command)
	}
	return fmt.Sprintf("setup command %q failed with exit code %d", e.Command, e.Result.ExitCode)
}

// Run builds the sandbox, runs the setup commands, then the agent. The
// error is non-nil only when the agent did not run: a *SetupError, or a
// sandbox, tools or agent that could not be built; everything that
// happens once the agent runs is in the Result (a run the context ended is
// agent.Cancelled).
func Run(ctx context.Context, o Options) (Result, error) {
	if o.WorkTree == nil || o.Sandbox == nil || o.Model == nil {
		return Result{}, errors.New("session: WorkTree, Sandbox and Model are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	env, err := prepareEnvironment(ctx, o)
	if err != nil {
		return Result{}, err
	}
	defer env.release(o.Logger)
	o.env = env
	if o.Hooks.OnEnvironment != nil {
		o.Hooks.OnEnvironment(ctx, env.info)
	}
	sb, err := o.Sandbox(o.sandboxOptions(o.WorkTree.Dir(), o.WorkTree.CacheDir(), o.WorkTree.OnJobDisk()))
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	if c, ok := sb.(io.Closer); ok {
		// The sandbox holds the job's cgroup until the run ends.
		defer func() {
			if err := c.Close(); err != nil {
				o.Logger.Warn("close the sandbox", logattr.Err, err)
			}
		}()
	}
	commands := slices.Concat(env.setup, o.Settings.Setup)
	runSetup := func() error {
		key, warm := warmCaches(ctx, o, commands)
		env.info.WarmCaches = warm
		if err := setup(ctx, sb, o, commands); err != nil {
			return err
		}
		if !warm {
			// A warm start saves nothing: what it restored is this key's
			// entry, made by the same setup from the same lockfiles, and
			// saving copies the whole HOME again.
			saveCaches(ctx, o, key)
		}
		return nil
	}
	if c := o.Settings.SetupCommit; c != "" && len(commands) > 0 {
		err = o.WorkTree.WithTree(ctx, c, runSetup)
	} else {
		err = runSetup()
	}
	if err != nil {
		return Result{Environment: env.info}, err
	}
	var verify tools.Verifier
	if o.Settings.Test != "" {
		v, err := newVerifier(ctx, o, o.WorkTree)
		if err != nil {
			return Result{}, err
		}
		defer v.close()
		v.runBaseline(ctx)
		verify = v
	}
	tenv, err := tools.New(tools.Options{Verifier: verify, TestTimeout: o.Settings.TestTimeout,
		Sandbox: sb, Repo: o.WorkTree, Root: o.WorkTree.Dir(), TextMode: textMode(o.Model),
		TestCommand: o.Settings.Test, AllowWorkflowChanges: o.Settings.AllowWorkflowChanges,
		NestedInstructions: o.Settings.NestedInstructions, Logger: o.Logger,
	})
	if err != nil {
		return Result{}, fmt.Errorf("tools: %w", err)
	}
	defer tenv.Close()
	opts := []agent.Option{agent.WithConfig(o.Settings.Limits), agent.WithClock(o.Now), agent.WithLogger(o.Logger)}
	if o.RunID != "" {
		opts = append(opts, agent.WithRunID(o.RunID))
	}
	if o.Trajectory != nil {
		opts = append(opts, agent.WithTrajectory(o.Trajectory))
	}
	for _, h := range o.Hooks.Agent {
		opts = append(opts, agent.WithHooks(h))
	}
	a, err := agent.New(o.Model, tenv, opts...)
	if err != nil {
		return Result{}, err
	}
	if o.Hooks.OnAgentStart != nil {
		o.Hooks.OnAgentStart(ctx)
	}
	res, err := a.Run(ctx, o.Task)
	if err != nil && res.RunID == "" {
		return Result{}, err
	}
	if err != nil {
		o.Logger.Warn("agent run finished with an error", logattr.Err, err)
	}
	return Result{Agent: res, Review: reviewOf(tenv.ReviewState(), res.Patch), Environment: env.info}, nil
}

// setup runs the setup commands in order, with the network on, within
// SetupTimeout together. The first that fails is a *SetupError.
func setup(ctx context.Context, sb tools.Sandbox, o Options, commands []string) error {
	limit := o.Settings.SetupTimeout
	if limit <= 0 {
		limit = DefaultSetupTimeout
	}
	deadline := o.Now().Add(limit)
	for _, c := range commands {
		left := deadline.Sub(o.Now())
		if left <= 0 {
			return &SetupError{Command: c, Result: workspace.Result{ExitCode: -1, TimedOut: true}}
		}
		if o.Hooks.OnSetup != nil {
			o.Hooks.OnSetup(ctx, c)
		}
		res, err := sb.Run(ctx, workspace.Command{Script: c, Network: true, Timeout: left})
		if err != nil {
			return fmt.Errorf("setup command %q: %w", c, err)
		}
		o.Logger.Info("setup command ran", logattr.Command, c, logattr.ExitCode, res.ExitCode, logattr.Duration, res.Duration)
		if o.Hooks.OnSetupDone != nil {
			o.Hooks.OnSetupDone(ctx, c, res)
		}
		if res.TimedOut || res.ExitCode != 0 {
			return &SetupError{Command: c, Result: res}
		}
	}
	return nil
}

// reviewOf keeps what the harness saw of the review with the run's result:
// the review messages shown, and the last result of the repository's test
// command and whether it ran on the final patch.
func reviewOf(st tools.ReviewState, patch string) Review {
	return Review{
		Rounds: st.StagesShown, Stages: st.Stages, Test: st.LastTest, Verdict: st.Verdict,
		TestedFinal: st.LastTest != nil && st.TestedDiff == patch,
	}
}

// textMode reports whether the model acts with text blocks, not tools.
func textMode(m agent.Model) bool {
	t, ok := m.(interface{ TextMode() bool })
	return ok && t.TextMode()
}
