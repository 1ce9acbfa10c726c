package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/agenttest"
	"github.com/agentfix/agentfix/agent/llm"
)

const patch = "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n"

var task = agent.Task{Repo: "octo/widgets", Issue: 7, Title: "Widgets break", Body: "They break."}

// reply is a tool-mode turn costing one cent.
func reply(content string, calls ...agent.ToolCall) llm.Turn {
	return llm.Turn{Reply: agent.Reply{
		Message:      agent.Message{Role: agent.RoleAssistant, Content: content, ToolCalls: calls},
		FinishReason: agent.FinishToolCalls,
		Usage:        agent.Usage{InputTokens: 100, OutputTokens: 10},
		CostUSD:      0.01,
	}}
}

// truncated is a turn cut by the output limit.
func truncated() llm.Turn {
	t := reply("I will now write a very long", agenttest.Call("t", "bash", map[string]string{"command": "cat <<EOF"}))
	t.Reply.FinishReason = agent.FinishLength
	return t
}

// clock is a fake clock that tests advance.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// outcome is the part of a Result most tests check.
type outcome struct {
	Status  agent.ExitStatus
	Reason  string
	Cause   agent.ExitStatus
	Patch   string
	Summary string
	Steps   int
}

func outcomeOf(r agent.Result) outcome {
	return outcome{r.Status, r.Reason, r.Cause, r.Patch, r.Summary, r.Steps}
}

func limits(steps int) agent.Config {
	c := agent.DefaultConfig()
	c.MaxSteps = steps
	return c
}

func TestRunExitStatuses(t *testing.T) {
	dead := fmt.Errorf("bwrap exited: %w", agent.ErrEnvDead)
	tooLong := fmt.Errorf("prompt is too long: %w", agent.ErrContextExceeded)
	refused := fmt.Errorf("openai refused the key in OPENAI_API_KEY: %w", agent.ErrModelAuth)
	tests := []struct {
		name     string
		turns    []llm.Turn
		commands map[string]agenttest.Command
		patch    string // the working copy's patch before the run
		cfg      agent.Config
		diffErr  error
		want     outcome
		wantExec []string // names of the executed calls
	}{
		{
			name: "submitted after review",
			turns: []llm.Turn{
				reply("edit", agenttest.Bash("1", "edit x.go")),
				reply("submit", agenttest.Submit("2", "Fixed x.")),
				reply("submit again", agenttest.Submit("3", "Fixed x; tests pass.")),
			},
			commands: map[string]agenttest.Command{"edit x.go": {Output: "edited", Patch: patch}},
			cfg:      limits(10),
			want:     outcome{Status: agent.Submitted, Patch: patch, Summary: "Fixed x; tests pass.", Steps: 3},
			wantExec: []string{"bash", "submit", "submit"},
		},
		{
			name: "step limit with a diff autosubmits",
			turns: []llm.Turn{
				reply("edit", agenttest.Bash("1", "edit x.go")),
				reply("submit", agenttest.Submit("2", "Fixed x.")),
				reply("never asked"),
			},
			commands: map[string]agenttest.Command{"edit x.go": {Patch: patch}},
			cfg:      limits(2),
			want: outcome{Status: agent.Autosubmitted, Cause: agent.LimitsExceeded, Patch: patch, Steps: 2,
				Reason: "limits_exceeded: step limit reached: 2 of 2 steps"},
			wantExec: []string{"bash", "submit"},
		},
		{
			name:     "step limit without a diff",
			turns:    []llm.Turn{reply("look", agenttest.Bash("1", "ls"))},
			cfg:      limits(1),
			want:     outcome{Status: agent.LimitsExceeded, Reason: "step limit reached: 1 of 1 steps", Steps: 1},
			wantExec: []string{"bash"},
		},
		{
			name:  "three malformed replies",
			turns: []llm.Turn{reply("no call"), reply("still none"), reply("none again")},
			cfg:   limits(10),
			want: outcome{Status: agent.FormatErrorExit, Steps: 3,
				Reason: "3 unusable replies in a row; the last: format error: found 0 bash blocks, want exactly one"},
		},
		{
			name: "three malformed replies with a diff autosubmit",
			turns: []llm.Turn{
				reply("edit", agenttest.Bash("1", "edit x.go")),
				reply("no call"), reply("still none"), reply("none again"),
			},
			commands: map[string]agenttest.Command{"edit x.go": {Patch: patch}},
			cfg:      limits(10),
			want: outcome{Status: agent.Autosubmitted, Cause: agent.FormatErrorExit, Patch: patch, Steps: 4,
				Reason: "format_error: 3 unusable replies in a row; the last: format error: found 0 bash blocks, want exactly one"},
			wantExec: []string{"bash"},
		},
		{
			name: "a good reply resets the count",
			turns: []llm.Turn{
				reply("no call"), reply("none"),
				reply("look", agenttest.Bash("1", "ls")),
				reply("no call"), reply("none"),
				reply("submit", agenttest.Submit("2", "s")),
				reply("submit", agenttest.Submit("3", "done")),
			},
			cfg:      limits(10),
			want:     outcome{Status: agent.Submitted, Summary: "done", Steps: 7},
			wantExec: []string{"bash", "submit", "submit"},
		},
		{
			name:  "three truncated replies end the run",
			turns: []llm.Turn{truncated(), truncated(), truncated()},
			cfg:   limits(10),
			want: outcome{Status: agent.FormatErrorExit, Steps: 3,
				Reason: "3 unusable replies in a row; the last: reply truncated by the output token limit"},
		},
		{
			name: "a truncated reply is not run",
			turns: []llm.Turn{
				truncated(),
				reply("submit", agenttest.Submit("1", "s")),
				reply("submit", agenttest.Submit("2", "done")),
			},
			cfg:      limits(10),
			want:     outcome{Status: agent.Submitted, Summary: "done", Steps: 3},
			wantExec: []string{"submit", "submit"},
		},
		{
			name:  "context exceeded",
			turns: []llm.Turn{reply("look", agenttest.Bash("1", "ls")), {Err: tooLong}},
			cfg:   limits(10),
			want: outcome{Status: agent.ContextExceeded, Steps: 2,
				Reason: "model: query scripted/test: prompt is too long: context window exceeded"},
			wantExec: []string{"bash"},
		},
		{
			name:     "context exceeded with a diff autosubmits",
			turns:    []llm.Turn{reply("edit", agenttest.Bash("1", "edit x.go")), {Err: tooLong}},
			commands: map[string]agenttest.Command{"edit x.go": {Patch: patch}},
			cfg:      limits(10),
			want: outcome{Status: agent.Autosubmitted, Cause: agent.ContextExceeded, Patch: patch, Steps: 2,
				Reason: "context_exceeded: model: query scripted/test: prompt is too long: context window exceeded"},
			wantExec: []string{"bash"},
		},
		{
			name:  "api error",
			turns: []llm.Turn{{Err: errors.New("401 Unauthorized")}},
			cfg:   limits(10),
			want:  outcome{Status: agent.APIError, Steps: 1, Reason: "model: query scripted/test: 401 Unauthorized"},
		},
		{
			name:  "the provider refuses the key",
			turns: []llm.Turn{{Err: refused}},
			cfg:   limits(10),
			want: outcome{Status: agent.ModelAuth, Steps: 1,
				Reason: "model: query scripted/test: openai refused the key in OPENAI_API_KEY: model provider refused the credentials"},
		},
		{
			name:     "the provider refuses the key after a change autosubmits",
			turns:    []llm.Turn{reply("edit", agenttest.Bash("1", "edit x.go")), {Err: refused}},
			commands: map[string]agenttest.Command{"edit x.go": {Patch: patch}},
			cfg:      limits(10),
			want: outcome{Status: agent.Autosubmitted, Cause: agent.ModelAuth, Patch: patch, Steps: 2,
				Reason: "model_auth: model: query scripted/test: openai refused the key in OPENAI_API_KEY: model provider refused the credentials"},
			wantExec: []string{"bash"},
		},
		{
			name:     "env dead",
			turns:    []llm.Turn{reply("test", agenttest.Bash("1", "go test"))},
			commands: map[string]agenttest.Command{"go test": {Err: dead}},
			cfg:      limits(10),
			want: outcome{Status: agent.EnvDead, Steps: 1,
				Reason: "environment: execute bash: bwrap exited: environment dead"},
			wantExec: []string{"bash"},
		},
		{
			name:     "env dead with a diff autosubmits",
			turns:    []llm.Turn{reply("test", agenttest.Bash("1", "go test"))},
			commands: map[string]agenttest.Command{"go test": {Err: dead}},
			patch:    patch,
			cfg:      limits(10),
			want: outcome{Status: agent.Autosubmitted, Cause: agent.EnvDead, Patch: patch, Steps: 1,
				Reason: "env_dead: environment: execute bash: bwrap exited: environment dead"},
			wantExec: []string{"bash"},
		},
		{
			name:     "other env error",
			turns:    []llm.Turn{reply("test", agenttest.Bash("1", "go test"))},
			commands: map[string]agenttest.Command{"go test": {Err: errors.New("editor state lost")}},
			cfg:      limits(10),
			want:     outcome{Status: agent.Error, Steps: 1, Reason: "environment: execute bash: editor state lost"},
			wantExec: []string{"bash"},
		},
		{
			name:     "autosubmission whose diff fails keeps the status",
			turns:    []llm.Turn{reply("test", agenttest.Bash("1", "go test"))},
			commands: map[string]agenttest.Command{"go test": {Err: dead}},
			patch:    patch,
			diffErr:  fmt.Errorf("git diff: %w", agent.ErrEnvDead),
			cfg:      limits(10),
			want: outcome{Status: agent.EnvDead, Steps: 1,
				Reason: "environment: execute bash: bwrap exited: environment dead; no autosubmission: take diff: git diff: environment dead"},
			wantExec: []string{"bash"},
		},
		{
			name: "several calls in one reply run in order and stop at the final submit",
			turns: []llm.Turn{
				reply("both", agenttest.Bash("1", "edit x.go"), agenttest.Bash("2", "go test"), agenttest.Submit("3", "s")),
				reply("done", agenttest.Submit("4", "done"), agenttest.Bash("5", "rm -rf /")),
			},
			commands: map[string]agenttest.Command{"edit x.go": {Patch: patch}},
			cfg:      limits(10),
			want:     outcome{Status: agent.Submitted, Patch: patch, Summary: "done", Steps: 2},
			wantExec: []string{"bash", "bash", "submit", "submit"},
		},
		{
			name:  "the model runs out of replies",
			turns: []llm.Turn{reply("look", agenttest.Bash("1", "ls"))},
			cfg:   limits(10),
			want: outcome{Status: agent.APIError, Steps: 2,
				Reason: "model: query scripted/test: scripted/test: no reply left after 1"},
			wantExec: []string{"bash"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := agenttest.New(tt.commands)
			env.SetPatch(tt.patch)
			env.SetDiffError(tt.diffErr)
			model := llm.NewScripted("test", false, tt.turns...)
			a, err := agent.New(model, env, agent.WithConfig(tt.cfg))
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Run(context.Background(), task)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if diff := cmp.Diff(tt.want, outcomeOf(res)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			var names []string
			for _, c := range env.Executed() {
				names = append(names, c.Name)
			}
			if diff := cmp.Diff(tt.wantExec, names); diff != "" {
				t.Errorf("executed calls (-want +got):\n%s", diff)
			}
			for i, d := range env.Diffs() {
				if d.CtxErr != nil || !d.Deadline {
					t.Errorf("diff %d: context error %v, deadline %v; want a live context with a deadline", i, d.CtxErr, d.Deadline)
				}
			}
			assertAppendOnly(t, model.Calls())
		})
	}
}

// assertAppendOnly checks that every query's history extends the previous
// one unchanged (provider prompt caching depends on it).
func assertAppendOnly(t *testing.T, calls []llm.Call) {
	t.Helper()
	for i := 1; i < len(calls); i++ {
		prev, cur := calls[i-1].Messages, calls[i].Messages
		if len(cur) <= len(prev) {
			t.Fatalf("query %d sent %d messages, query %d sent %d; want more", i, len(cur), i-1, len(prev))
		}
		if diff := cmp.Diff(prev, cur[:len(prev)]); diff != "" {
			t.Fatalf("query %d changed the history of query %d (-before +after):\n%s", i, i-1, diff)
		}
	}
}

func TestRunMessages(t *testing.T) {
	env := agenttest.New(map[string]agenttest.Command{"big": {Output: strings.Repeat("a", 300) + strings.Repeat("z", 300)}})
	model := llm.NewScripted("test", false,
		reply("two calls", agenttest.Bash("c1", "ls"), agenttest.Bash("c2", "big")),
		reply("no call"),
		truncated(),
		reply("submit", agenttest.Submit("c3", "s")),
	)
	cfg := limits(4)
	cfg.ObservationCap = 200
	a, err := agent.New(model, env, agent.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	calls := model.Calls()
	last := calls[len(calls)-1].Messages
	type msg struct {
		Role   agent.Role
		CallID string
		Start  string
	}
	var got []msg
	for _, m := range last[2:] {
		got = append(got, msg{m.Role, m.ToolCallID, strings.SplitN(m.Content, "\n", 2)[0]})
	}
	want := []msg{
		{agent.RoleAssistant, "", "two calls"},
		{agent.RoleTool, "c1", "ran: ls"},
		{agent.RoleTool, "c2", strings.Repeat("a", 100)},
		{agent.RoleAssistant, "", "no call"},
		{agent.RoleUser, "", "Your last reply could not be used: found 0 bash blocks, want exactly one"},
		{agent.RoleAssistant, "", "I will now write a very long"},
		// A truncated reply's cut-off tool call is answered, as tool calling requires.
		{agent.RoleTool, "t", "Your last reply was cut off because it reached the output token limit, so it was not used. Reply again, more briefly: keep your reasoning short and make one tool call. Write a large file in several smaller pieces. This was unusable reply 2 in a row; after 3 the run ends."},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages after the instance (-want +got):\n%s", diff)
	}
	if len(calls[0].Tools) != 2 {
		t.Errorf("the model got %d tools, want the env's 2", len(calls[0].Tools))
	}
	big := last[4].Content
	wantBig := strings.Repeat("a", 100) + "\n[... 400 of 600 characters elided; narrow your command (grep, head, tail, sed -n) to see them ...]\n" + strings.Repeat("z", 100)
	if big != wantBig {
		t.Errorf("long observation:\n got %q\nwant %q", big, wantBig)
	}
}

func TestRunTextMode(t *testing.T) {
	env := agenttest.New(nil)
	model := llm.NewScripted("test", true,
		reply("Let me look.\n\n```bash\nls -la\n```"),
		reply("```bash\nsubmit first\n```"),
		reply("Done.\n\n```bash\nsubmit Fixed it.\n```"),
	)
	a, err := agent.New(model, env, agent.WithConfig(limits(5)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(outcome{Status: agent.Submitted, Summary: "Fixed it.", Steps: 3}, outcomeOf(res)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	calls := model.Calls()
	if sys := calls[0].Messages[0].Content; !strings.Contains(sys, "exactly one fenced code block tagged `bash`") {
		t.Errorf("system prompt is not the text-mode one:\n%s", sys)
	}
	obs := calls[1].Messages[3]
	if diff := cmp.Diff(agent.Message{Role: agent.RoleUser, Content: "ran: ls -la"}, obs); diff != "" {
		t.Errorf("text-mode observation (-want +got):\n%s", diff)
	}
}

func TestRunLimits(t *testing.T) {
	t.Run("cost", func(t *testing.T) {
		env := agenttest.New(nil)
		model := llm.NewScripted("test", false,
			reply("a", agenttest.Bash("1", "ls")), reply("b", agenttest.Bash("2", "ls")), reply("c", agenttest.Bash("3", "ls")))
		cfg := limits(10)
		cfg.MaxCostUSD = 0.015
		a, err := agent.New(model, env, agent.WithConfig(cfg))
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Run(context.Background(), task)
		if err != nil {
			t.Fatal(err)
		}
		want := outcome{Status: agent.LimitsExceeded, Steps: 2, Reason: "cost limit reached: $0.0200 spent of $0.01"}
		if diff := cmp.Diff(want, outcomeOf(res)); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		if res.CostUSD != 0.02 || res.Usage.InputTokens != 200 {
			t.Errorf("totals: cost %v, input tokens %d; want 0.02 and 200", res.CostUSD, res.Usage.InputTokens)
		}
	})
	t.Run("tokens", func(t *testing.T) {
		env := agenttest.New(nil)
		model := llm.NewScripted("test", false, reply("a", agenttest.Bash("1", "ls")), reply("b", agenttest.Bash("2", "ls")))
		cfg := limits(10)
		cfg.MaxTokens = 110
		a, err := agent.New(model, env, agent.WithConfig(cfg))
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Run(context.Background(), task)
		if err != nil {
			t.Fatal(err)
		}
		want := outcome{Status: agent.LimitsExceeded, Steps: 1, Reason: "token limit reached: 110 of 110 tokens"}
		if diff := cmp.Diff(want, outcomeOf(res)); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	})
	t.Run("wall time", func(t *testing.T) {
		clk := newClock()
		env := agenttest.New(map[string]agenttest.Command{"slow": {Do: func(context.Context) (agent.Observation, error) {
			clk.Advance(20 * time.Minute)
			return agent.Observation{Output: "done"}, nil
		}}})
		turns := []llm.Turn{}
		for i := range 5 {
			turns = append(turns, reply("again", agenttest.Bash(fmt.Sprint(i), "slow")))
		}
		model := llm.NewScripted("test", false, turns...)
		cfg := limits(10)
		cfg.MaxDuration = 45 * time.Minute
		a, err := agent.New(model, env, agent.WithConfig(cfg), agent.WithClock(clk.Now))
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Run(context.Background(), task)
		if err != nil {
			t.Fatal(err)
		}
		want := outcome{Status: agent.LimitsExceeded, Steps: 3, Reason: "time limit reached: 1h0m0s elapsed of 45m0s"}
		if diff := cmp.Diff(want, outcomeOf(res)); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		if res.Duration != time.Hour {
			t.Errorf("duration %s, want 1h0m0s on the fake clock", res.Duration)
		}
	})
}

func TestRunCancelled(t *testing.T) {
	tests := []struct {
		name     string
		turns    func(cancel context.CancelFunc) []llm.Turn
		commands func(cancel context.CancelFunc) map[string]agenttest.Command
		wantExec int
	}{
		{
			name: "mid-command",
			turns: func(context.CancelFunc) []llm.Turn {
				return []llm.Turn{reply("test", agenttest.Bash("1", "go test ./..."), agenttest.Bash("2", "ls"))}
			},
			commands: func(cancel context.CancelFunc) map[string]agenttest.Command {
				return map[string]agenttest.Command{"go test ./...": {Do: func(ctx context.Context) (agent.Observation, error) {
					cancel()
					<-ctx.Done()
					return agent.Observation{}, fmt.Errorf("command killed: %w", ctx.Err())
				}}}
			},
			wantExec: 1,
		},
		{
			name: "mid-command that returns an observation",
			turns: func(context.CancelFunc) []llm.Turn {
				return []llm.Turn{reply("test", agenttest.Bash("1", "go test ./...")), reply("more", agenttest.Bash("2", "ls"))}
			},
			commands: func(cancel context.CancelFunc) map[string]agenttest.Command {
				return map[string]agenttest.Command{"go test ./...": {Do: func(ctx context.Context) (agent.Observation, error) {
					cancel()
					<-ctx.Done()
					return agent.Observation{Output: "killed"}, nil
				}}}
			},
			wantExec: 1,
		},
		{
			name: "mid-query",
			turns: func(cancel context.CancelFunc) []llm.Turn {
				return []llm.Turn{reply("edit", agenttest.Bash("1", "ls")), {Do: func(ctx context.Context, _ []agent.Message) (agent.Reply, error) {
					cancel()
					<-ctx.Done()
					return agent.Reply{}, fmt.Errorf("post chat completion: %w", ctx.Err())
				}}}
			},
			wantExec: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			stop := func() { cancel(errors.New("stopped by @alice")) }
			var commands map[string]agenttest.Command
			if tt.commands != nil {
				commands = tt.commands(stop)
			}
			env := agenttest.New(commands)
			env.SetPatch(patch) // a diff exists, and still nothing is submitted
			model := llm.NewScripted("test", false, tt.turns(stop)...)
			a, err := agent.New(model, env, agent.WithConfig(limits(10)))
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Run(ctx, task)
			if err != nil {
				t.Fatal(err)
			}
			want := outcome{Status: agent.Cancelled, Reason: "stopped by @alice", Steps: len(model.Calls())}
			if diff := cmp.Diff(want, outcomeOf(res)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if n := len(env.Diffs()); n != 0 {
				t.Errorf("Diff called %d times; a cancelled run takes no diff", n)
			}
			if n := len(env.Executed()); n != tt.wantExec {
				t.Errorf("executed %d calls, want %d", n, tt.wantExec)
			}
		})
	}
}

func TestRunHooks(t *testing.T) {
	tests := []struct {
		name  string
		hooks agent.Hooks
		patch string
		want  outcome
	}{
		{
			name: "budget stop at step start autosubmits",
			hooks: agent.Hooks{OnStepStart: func(_ context.Context, s agent.StepStart) error {
				if s.Step == 2 {
					return &agent.StopError{Status: agent.LimitsExceeded, Reason: "repository daily budget spent"}
				}
				return nil
			}},
			patch: patch,
			want: outcome{Status: agent.Autosubmitted, Cause: agent.LimitsExceeded, Patch: patch, Steps: 1,
				Reason: "limits_exceeded: repository daily budget spent"},
		},
		{
			name: "budget stop without a diff",
			hooks: agent.Hooks{OnStepDone: func(context.Context, agent.Step) error {
				return fmt.Errorf("charge: %w", &agent.StopError{Status: agent.LimitsExceeded, Reason: "installation daily budget spent"})
			}},
			want: outcome{Status: agent.LimitsExceeded, Steps: 1, Reason: "installation daily budget spent"},
		},
		{
			name: "stop marker cancels without autosubmission",
			hooks: agent.Hooks{OnStepDone: func(context.Context, agent.Step) error {
				return &agent.StopError{Status: agent.Cancelled, Reason: "stopped by @alice"}
			}},
			patch: patch,
			want:  outcome{Status: agent.Cancelled, Steps: 1, Reason: "stopped by @alice"},
		},
		{
			name: "other hook error",
			hooks: agent.Hooks{OnStepDone: func(context.Context, agent.Step) error {
				return errors.New("redis down")
			}},
			want: outcome{Status: agent.Error, Steps: 1, Reason: "step done hook: redis down"},
		},
		{
			name: "a hook cannot choose submitted",
			hooks: agent.Hooks{OnStepStart: func(context.Context, agent.StepStart) error {
				return &agent.StopError{Status: agent.Submitted, Reason: "looks good"}
			}},
			want: outcome{Status: agent.Error, Reason: `hook chose status "submitted", which a hook cannot choose: looks good`},
		},
		{
			name: "a hook cannot make up a status",
			hooks: agent.Hooks{OnStepStart: func(context.Context, agent.StepStart) error {
				return &agent.StopError{Status: "paused", Reason: "later"}
			}},
			want: outcome{Status: agent.Error, Reason: `hook chose status "paused", which a hook cannot choose: later`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := agenttest.New(nil)
			env.SetPatch(tt.patch)
			model := llm.NewScripted("test", false, reply("a", agenttest.Bash("1", "ls")), reply("b", agenttest.Bash("2", "ls")))
			a, err := agent.New(model, env, agent.WithConfig(limits(10)), agent.WithHooks(tt.hooks))
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Run(context.Background(), task)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, outcomeOf(res)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunHookArguments(t *testing.T) {
	clk := newClock()
	var events []string
	record := agent.Hooks{
		OnStepStart: func(_ context.Context, s agent.StepStart) error {
			events = append(events, fmt.Sprintf("start %d elapsed=%s cost=%.2f tokens=%d", s.Step, s.Elapsed, s.TotalCostUSD, s.TotalUsage.Total()))
			clk.Advance(time.Second)
			return nil
		},
		OnStepDone: func(_ context.Context, s agent.Step) error {
			events = append(events, fmt.Sprintf("done %d action=%q cost=%.2f total=%.2f tokens=%d", s.Step, s.LastAction(), s.CostUSD, s.TotalCostUSD, s.TotalUsage.Total()))
			return nil
		},
		OnRunDone: func(_ context.Context, r agent.Result) error {
			events = append(events, fmt.Sprintf("run %s steps=%d cost=%.2f duration=%s", r.Status, r.Steps, r.CostUSD, r.Duration))
			return errors.New("post final comment: 502")
		},
	}
	second := agent.Hooks{OnStepDone: func(_ context.Context, s agent.Step) error {
		events = append(events, fmt.Sprintf("second hook %d", s.Step))
		return nil
	}}
	model := llm.NewScripted("test", false,
		reply("a", agenttest.Bash("1", "go test ./...  # the whole\n  suite")),
		reply("b", agenttest.Submit("2", "s")), reply("c", agenttest.Submit("3", "s")))
	a, err := agent.New(model, agenttest.New(nil), agent.WithConfig(limits(10)), agent.WithHooks(record), agent.WithHooks(second), agent.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), task)
	if err == nil || !strings.Contains(err.Error(), "run done hook: post final comment: 502") {
		t.Errorf("Run error = %v, want the OnRunDone error", err)
	}
	if res.Status != agent.Submitted {
		t.Errorf("status %s, want the complete result (submitted) alongside the hook error", res.Status)
	}
	want := []string{
		"start 1 elapsed=0s cost=0.00 tokens=0",
		`done 1 action="bash: go test ./... # the whole suite" cost=0.01 total=0.01 tokens=110`,
		"second hook 1",
		"start 2 elapsed=1s cost=0.01 tokens=110",
		`done 2 action="submit" cost=0.01 total=0.02 tokens=220`,
		"second hook 2",
		"start 3 elapsed=2s cost=0.02 tokens=220",
		`done 3 action="submit" cost=0.01 total=0.03 tokens=330`,
		"second hook 3",
		"run submitted steps=3 cost=0.03 duration=3s",
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("hook events (-want +got):\n%s", diff)
	}
}

// silentEnv breaks the Env contract: it finds no action and no error.
type silentEnv struct{ *agenttest.Env }

func (silentEnv) Actions(agent.Message) ([]agent.ToolCall, error) { return nil, nil }

func TestRunReplyWithoutActions(t *testing.T) {
	model := llm.NewScripted("test", false, reply("a"), reply("b"), reply("c"))
	a, err := agent.New(model, silentEnv{agenttest.New(nil)}, agent.WithConfig(limits(10)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	want := outcome{Status: agent.FormatErrorExit, Steps: 3, Reason: "3 unusable replies in a row; the last: format error: the reply has no action"}
	if diff := cmp.Diff(want, outcomeOf(res)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

func TestRunRefuses(t *testing.T) {
	model := llm.NewScripted("test", false)
	env := agenttest.New(nil)
	t.Run("invalid task", func(t *testing.T) {
		a, err := agent.New(model, env)
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.Run(context.Background(), agent.Task{Repo: "o/r"})
		if err == nil || !strings.Contains(err.Error(), "no title, body or instructions") {
			t.Errorf("Run error = %v, want the invalid task named", err)
		}
	})
	t.Run("instructions without their file", func(t *testing.T) {
		a, err := agent.New(model, env)
		if err != nil {
			t.Fatal(err)
		}
		bad := task
		bad.RepoInstructions = &agent.InstructionsFile{Text: "Run make."}
		_, err = a.Run(context.Background(), bad)
		if err == nil || !strings.Contains(err.Error(), "repository instructions without the file's path") {
			t.Errorf("Run error = %v, want the missing path named", err)
		}
	})
	t.Run("second run", func(t *testing.T) {
		a, err := agent.New(llm.NewScripted("test", false, reply("a", agenttest.Submit("1", "")), reply("b", agenttest.Submit("2", ""))), env)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Run(context.Background(), task); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Run(context.Background(), task); err == nil || !strings.Contains(err.Error(), "already ran") {
			t.Errorf("second Run error = %v, want already ran", err)
		}
	})
	t.Run("config", func(t *testing.T) {
		_, err := agent.New(model, env, agent.WithConfig(agent.Config{MaxCostUSD: -1}))
		want := "new agent: agent config: max cost -1.00 USD is negative\na run needs a step limit or a time limit"
		if err == nil || err.Error() != want {
			t.Errorf("New error = %v, want %q", err, want)
		}
	})
}
