// Package agenttest provides a stateful fake agent.Env for tests of the
// agent loop and of code that drives it. It records what the loop asked of
// it, so tests can check the order of actions, what was parsed, and how
// the diff was taken.
package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/agentfix/agentfix/agent"
)

// Env is a fake agent.Env with the tools bash and submit. Its bash runs
// nothing: a command does what Commands says, or prints "ran: COMMAND".
// Submit has the two phases of DESIGN.md §7: the first call returns a
// review message with the current patch, the next ends the run (unless
// SetSubmitRefusal made it refuse every submission). The
// current patch is what Diff returns; commands may change it.
type Env struct {
	mu       sync.Mutex
	commands map[string]Command
	patch    string
	diffErr  error
	refusal  string
	reviewed bool
	parsed   []agent.Message
	executed []agent.ToolCall
	diffs    []DiffCall
}

// Command is what running one bash command does in the fake.
type Command struct {
	// Output is the command's output.
	Output string
	// Patch, when not empty, becomes the current patch (the command
	// edited files).
	Patch string
	// Err is returned by Execute; wrap agent.ErrEnvDead for a dead sandbox.
	Err error
	// Do, when set, runs instead of the fields above with Execute's
	// context, e.g. to cancel the run while the command runs.
	Do func(ctx context.Context) (agent.Observation, error)
}

// DiffCall records one Diff call: the state of its context.
type DiffCall struct {
	// CtxErr is the context's error when Diff was called.
	CtxErr error
	// Deadline reports whether the context had a deadline.
	Deadline bool
}

// New returns a fake Env whose commands do what the map says.
func New(commands map[string]Command) *Env {
	return &Env{commands: commands}
}

// SetPatch sets the current patch.
func (e *Env) SetPatch(p string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.patch = p
}

// SetDiffError makes Diff fail with err.
func (e *Env) SetDiffError(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.diffErr = err
}

// SetSubmitRefusal makes every submit answer output and never end the run,
// as a submission the harness refuses does (empty "" restores the review).
func (e *Env) SetSubmitRefusal(output string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refusal = output
}

// Parsed returns the messages Actions was given, in order.
func (e *Env) Parsed() []agent.Message {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]agent.Message(nil), e.parsed...)
}

// Executed returns the calls Execute was given, in order.
func (e *Env) Executed() []agent.ToolCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]agent.ToolCall(nil), e.executed...)
}

// Diffs returns the Diff calls, in order.
func (e *Env) Diffs() []DiffCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]DiffCall(nil), e.diffs...)
}

// Tools returns bash and submit with the schemas of DESIGN.md §7.
func (e *Env) Tools() []agent.ToolSpec {
	return []agent.ToolSpec{
		{Name: "bash", Description: "Run a command in /workspace.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
		{Name: "submit", Description: "Submit the change for review.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string"}}}`)},
	}
}

var bashBlock = regexp.MustCompile("(?s)```bash\n(.*?)\n```")

// Actions returns the message's tool calls, checked against the tools, or
// in text mode (no tool calls) the one bash block of its text.
func (e *Env) Actions(msg agent.Message) ([]agent.ToolCall, error) {
	e.mu.Lock()
	e.parsed = append(e.parsed, msg)
	e.mu.Unlock()
	if len(msg.ToolCalls) == 0 {
		return textAction(msg.Content)
	}
	for _, c := range msg.ToolCalls {
		var args map[string]any
		if err := json.Unmarshal(c.Arguments, &args); err != nil {
			return nil, &agent.FormatError{Msg: fmt.Sprintf("the arguments of %s are not a JSON object", c.Name)}
		}
		switch c.Name {
		case "bash":
			if _, ok := args["command"].(string); !ok {
				return nil, &agent.FormatError{Msg: "bash needs a string command"}
			}
		case "submit":
		default:
			return nil, &agent.FormatError{Msg: fmt.Sprintf("unknown tool %q", c.Name)}
		}
	}
	return msg.ToolCalls, nil
}

func textAction(text string) ([]agent.ToolCall, error) {
	blocks := bashBlock.FindAllStringSubmatch(text, -1)
	if len(blocks) != 1 {
		return nil, &agent.FormatError{Msg: fmt.Sprintf("found %d bash blocks, want exactly one", len(blocks))}
	}
	cmd := strings.TrimSpace(blocks[0][1])
	if cmd == "submit" || strings.HasPrefix(cmd, "submit ") {
		return []agent.ToolCall{Call("text", "submit", map[string]string{"summary": strings.TrimSpace(strings.TrimPrefix(cmd, "submit"))})}, nil
	}
	return []agent.ToolCall{Call("text", "bash", map[string]string{"command": cmd})}, nil
}

// Execute runs a call in the fake.
func (e *Env) Execute(ctx context.Context, call agent.ToolCall) (agent.Observation, error) {
	e.mu.Lock()
	e.executed = append(e.executed, call)
	e.mu.Unlock()
	var args struct {
		Command string `json:"command"`
		Summary string `json:"summary"`
	}
	if err := json.Unmarshal(call.Arguments, &args); err != nil {
		return agent.Observation{}, fmt.Errorf("fake env: arguments of %s: %w", call.Name, err)
	}
	switch call.Name {
	case "bash":
		return e.bash(ctx, args.Command)
	case "submit":
		return e.submit(args.Summary), nil
	}
	return agent.Observation{}, fmt.Errorf("fake env: unknown tool %q", call.Name)
}

func (e *Env) bash(ctx context.Context, command string) (agent.Observation, error) {
	e.mu.Lock()
	c, ok := e.commands[command]
	e.mu.Unlock()
	switch {
	case !ok:
		return agent.Observation{Output: "ran: " + command}, nil
	case c.Do != nil:
		return c.Do(ctx)
	case c.Err != nil:
		return agent.Observation{}, c.Err
	}
	if c.Patch != "" {
		e.SetPatch(c.Patch)
	}
	return agent.Observation{Output: c.Output}, nil
}

func (e *Env) submit(summary string) agent.Observation {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.refusal != "" {
		return agent.Observation{Output: e.refusal}
	}
	if !e.reviewed {
		e.reviewed = true
		return agent.Observation{Output: "Review your change, then submit again.\n\n" + e.patch}
	}
	return agent.Observation{Output: "submitted", Submitted: true, Summary: summary}
}

// Diff returns the current patch and records the state of ctx.
func (e *Env) Diff(ctx context.Context) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, deadline := ctx.Deadline()
	e.diffs = append(e.diffs, DiffCall{CtxErr: ctx.Err(), Deadline: deadline})
	if e.diffErr != nil {
		return "", e.diffErr
	}
	return e.patch, nil
}

// Call returns a tool call with args marshalled to JSON.
func Call(id, name string, args any) agent.ToolCall {
	b, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("agenttest.Call: marshal arguments: %v", err)) // a test's own bad input
	}
	return agent.ToolCall{ID: id, Name: name, Arguments: b}
}

// Bash returns a bash tool call.
func Bash(id, command string) agent.ToolCall {
	return Call(id, "bash", map[string]string{"command": command})
}

// Submit returns a submit tool call.
func Submit(id, summary string) agent.ToolCall {
	return Call(id, "submit", map[string]string{"summary": summary})
}

var _ agent.Env = (*Env)(nil)
