package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	template "github.com/DataDog/datadog-agent/pkg/template/text"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/workspace"
)

// Sandbox runs one command in the job's working copy, mounted at
// /workspace (workspace.Bwrap, workspace.Docker, workspace.None). A command
// that runs and fails is a Result; an error wrapping
// workspace.ErrSandboxDead means no command can run any more, and ctx's
// error means the run was cancelled.
type Sandbox interface {
	Run(ctx context.Context, c workspace.Command) (workspace.Result, error)
}

// Repo is the job's working copy as the harness sees it, through a git
// directory the sandbox never saw (workspace.WorkTree).
type Repo interface {
	// Diff returns the patch from the base commit to the working copy.
	Diff(ctx context.Context) (string, error)
	// Changes summarizes the same change.
	Changes(ctx context.Context) (workspace.Changes, error)
	// Base is the base commit's id.
	Base() string
}

// DefaultOutputLimit bounds each tool result (head and tail kept) when
// Options.OutputLimit is 0: the agent's own cap on an observation, so that
// a result is cut once and the model sees the figure the tool descriptions
// state.
const DefaultOutputLimit = agent.DefaultObservationCap

// DefaultCommandTimeout bounds each bash command when
// Options.CommandTimeout is 0: the sandboxes' default.
const DefaultCommandTimeout = workspace.DefaultTimeout

// DefaultTestOutputLimit bounds the test command output shown in a review
// message when Options.TestOutputLimit is 0.
const DefaultTestOutputLimit = 8 << 10

// Options configure an Env.
type Options struct {
	// Sandbox runs bash commands and the test command. Required.
	Sandbox Sandbox
	// Repo computes the diff and the facts of a submission. Required.
	Repo Repo
	// Root is the host path of the working copy, the directory the
	// sandbox mounts at /workspace; the editor works there. Required.
	Root string
	// TextMode selects text actions: one fenced bash block per reply.
	TextMode bool
	// CommandTimeout bounds each bash command (the tool description
	// states it); 0 selects DefaultCommandTimeout.
	CommandTimeout time.Duration
	// TestCommand is the repository's test command, run (network off) for
	// every review message; empty when none is configured.
	TestCommand string
	// Verifier, when set, runs the test command for the review instead of
	// the agent's own sandbox, and gives the evidence of the change.
	Verifier Verifier
	// TestTimeout bounds the test command; 0 leaves the sandbox's.
	TestTimeout time.Duration
	// ReviewStages are template sources of the review messages, one per
	// submit call before the final one, in text/template's language without
	// method calls (agent.Templates says why); they are rendered with a
	// ReviewData. Empty selects the embedded default, one stage.
	ReviewStages []string
	// AllowWorkflowChanges lets a submission change .github/workflows/.
	AllowWorkflowChanges bool
	// OutputLimit bounds each tool result in bytes, head and tail kept
	// (the tool description states it); 0 selects DefaultOutputLimit.
	// Keep it at most the agent's Config.ObservationCap, which cuts again.
	OutputLimit int
	// TestOutputLimit bounds the test output shown in a review message.
	TestOutputLimit int
	// NestedInstructions maps directories of the repository (relative to
	// its root, e.g. "pkg/api") to the text of the instructions file for
	// agents in each (their AGENTS.md, from the default branch); the
	// repository-wide one goes in agent.Task instead. Each is shown once,
	// sanitised and cut to MaxNestedInstructionsBytes, after the
	// observation of the first editor call on a path under its directory,
	// or of the first bash command with a word naming such a path (a best
	// effort: a path built by the shell, such as $(dirname x), is missed).
	NestedInstructions map[string]string
	// Logger receives records of tool calls; nil discards them.
	Logger *slog.Logger
}

// Env implements agent.Env with the bash, str_replace_editor and submit
// tools over a sandbox and a working copy. It holds one job's state (the
// editor's undo history, the submit stage) and is safe for concurrent use.
// Close it when the job ends.
type Env struct {
	opts         Options
	editor       *editor
	stages       []*template.Template
	workflows    *template.Template
	empty        *template.Template
	symlinks     *template.Template
	nested       []NestedInstructions // outermost first
	instructions *template.Template

	mu      sync.Mutex
	stage   int    // review messages shown so far
	summary string // the latest summary given to submit
	// lastTest is the test command's latest result and testedDiff the
	// diff it ran on (see ReviewState).
	lastTest    *TestResult
	lastVerdict *Verdict
	testedDiff  string
	// shown holds the directories whose nested instructions the model saw.
	shown map[string]bool
}

var _ agent.Env = (*Env)(nil)

// New returns an Env for one job. It opens the working copy for the editor
// and parses and test-renders the review templates.
func New(o Options) (*Env, error) {
	if o.Sandbox == nil || o.Repo == nil || o.Root == "" {
		return nil, errors.New("new tools env: Sandbox, Repo and Root are required")
	}
	if o.OutputLimit <= 0 {
		o.OutputLimit = DefaultOutputLimit
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = DefaultCommandTimeout
	}
	if o.TestOutputLimit <= 0 {
		o.TestOutputLimit = DefaultTestOutputLimit
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e := &Env{opts: o, shown: map[string]bool{}}
	var err error
	if e.stages, e.workflows, e.empty, e.symlinks, err = parseTemplates(o.ReviewStages); err != nil {
		return nil, fmt.Errorf("new tools env: %w", err)
	}
	if e.nested, err = nestedInstructions(o.NestedInstructions, o.OutputLimit); err != nil {
		return nil, fmt.Errorf("new tools env: %w", err)
	}
	if e.instructions, err = parseInstructions(); err != nil {
		return nil, fmt.Errorf("new tools env: %w", err)
	}
	root, err := os.OpenRoot(o.Root)
	if err != nil {
		return nil, fmt.Errorf("new tools env: open working copy: %w", err)
	}
	e.editor = newEditor(root, o.OutputLimit)
	return e, nil
}

// Close releases the working copy.
func (e *Env) Close() error {
	return e.editor.root.Close()
}

// Tools returns the specs of bash, str_replace_editor and submit, or nil in
// text mode (the model gets no tool definitions there).
func (e *Env) Tools() []agent.ToolSpec {
	if e.opts.TextMode {
		return nil
	}
	return toolSpecs(e.opts.CommandTimeout, e.opts.OutputLimit)
}

// CommandLimits tells the agent's prompts each command's time limit and the
// cap on a tool result, as the tool descriptions state them.
func (e *Env) CommandLimits() agent.CommandLimits {
	return agent.CommandLimits{Timeout: e.opts.CommandTimeout, OutputCap: e.opts.OutputLimit}
}

// Execute runs one action. Bad arguments and failed commands are
// observations the model sees; the error is non-nil only when the sandbox
// or the working copy is gone (wrapping agent.ErrEnvDead) or ctx ended.
func (e *Env) Execute(ctx context.Context, call agent.ToolCall) (agent.Observation, error) {
	args, err := decodeCall(call)
	var bad *agent.FormatError
	if errors.As(err, &bad) {
		return agent.Observation{Output: bad.Msg}, nil
	}
	var obs agent.Observation
	var paths []string // what the call names, for the nested instructions
	switch a := args.(type) {
	case bashArgs:
		obs, err = e.bash(ctx, *a.Command)
		paths = commandWords(*a.Command)
	case editorArgs:
		obs = agent.Observation{Output: e.editor.run(a)}
		paths = []string{*a.Path}
	case submitArgs:
		obs, err = e.submit(ctx, a)
	}
	var notes string
	if err == nil {
		if notes, err = e.instructionsFor(paths); err != nil {
			return agent.Observation{}, err
		}
	}
	obs.Output = workspace.Clip(obs.Output, max(e.opts.OutputLimit-len(notes), e.opts.OutputLimit/2))
	if notes != "" {
		obs.Output = strings.TrimRight(obs.Output, "\n") + notes
	}
	e.opts.Logger.Debug("tool call", logattr.Action, call.Name, logattr.Outcome, outcome(obs, err), logattr.Err, err)
	return obs, err
}

// Diff returns the current patch against the base commit. The loop's
// autosubmission calls it directly: there is no review for that path.
func (e *Env) Diff(ctx context.Context) (string, error) {
	d, err := e.opts.Repo.Diff(ctx)
	if err != nil {
		return "", envErr("diff", err)
	}
	return d, nil
}

// envErr wraps err with agent.ErrEnvDead when it means the sandbox or the
// working copy is gone.
func envErr(what string, err error) error {
	if errors.Is(err, workspace.ErrSandboxDead) {
		return fmt.Errorf("%s: %w: %w", what, agent.ErrEnvDead, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// outcome names how a tool call ended, for the log.
func outcome(obs agent.Observation, err error) string {
	switch {
	case err != nil:
		return "error"
	case obs.Submitted:
		return "submitted"
	}
	return "ok"
}
