package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/agenttest"
	"github.com/agentfix/agentfix/agent/llm"
)

// observations returns the observation messages of the last query's
// history (tool results and, in text mode, user messages after the
// instance).
func observations(calls []llm.Call) []string {
	last := calls[len(calls)-1].Messages
	var out []string
	for _, m := range last[2:] {
		if m.Role == agent.RoleTool || m.Role == agent.RoleUser {
			out = append(out, m.Content)
		}
	}
	return out
}

func TestRunStuck(t *testing.T) {
	const repeatNote = "[Note from the harness: you ran the same action"
	tests := []struct {
		name      string
		turns     []llm.Turn
		patch     string
		refuse    string // every submit answers this
		want      outcome
		wantNotes []bool // per observation seen by the last query: does it carry the note
	}{
		{
			name: "five identical actions end the run",
			turns: []llm.Turn{
				reply("", agenttest.Bash("1", "go test ./...")), reply("", agenttest.Bash("2", "go test ./...")),
				reply("", agenttest.Bash("3", "go test ./...")), reply("", agenttest.Bash("4", "go test ./...")),
				reply("", agenttest.Bash("5", "go test ./...")), reply("never asked"),
			},
			want: outcome{Status: agent.Stuck, Steps: 5,
				Reason: "the same action gave the same observation 5 times in a row: bash: go test ./..."},
			wantNotes: []bool{false, false, true, true},
		},
		{
			name: "stuck with a change autosubmits",
			turns: []llm.Turn{
				reply("", agenttest.Bash("1", "make")), reply("", agenttest.Bash("2", "make")), reply("", agenttest.Bash("3", "make")),
				reply("", agenttest.Bash("4", "make")), reply("", agenttest.Bash("5", "make")),
			},
			patch: patch,
			want: outcome{Status: agent.Autosubmitted, Cause: agent.Stuck, Patch: patch, Steps: 5,
				Reason: "stuck: the same action gave the same observation 5 times in a row: bash: make"},
			wantNotes: []bool{false, false, true, true},
		},
		{
			name: "the same failing submit does not run to the step limit",
			turns: func() []llm.Turn {
				var turns []llm.Turn
				for i := range 70 {
					turns = append(turns, reply("done", agenttest.Submit(fmt.Sprint(i), "Fixed it.")))
				}
				return turns
			}(),
			refuse: "There is nothing to submit: the working copy has no changes.",
			want: outcome{Status: agent.Stuck, Steps: 5,
				Reason: "the same action gave the same observation 5 times in a row: submit"},
			wantNotes: []bool{false, false, true, true},
		},
		{
			name: "the same arguments spaced differently are the same action",
			turns: []llm.Turn{
				reply("", agenttest.Bash("1", "ls")),
				reply("", agent.ToolCall{ID: "2", Name: "bash", Arguments: []byte(`{ "command" : "ls" }`)}),
				reply("", agent.ToolCall{ID: "3", Name: "bash", Arguments: []byte("{\"command\":\n\"ls\"}")}),
				reply("", agenttest.Submit("4", "s")), reply("", agenttest.Submit("5", "s")),
			},
			want:      outcome{Status: agent.Submitted, Summary: "s", Steps: 5},
			wantNotes: []bool{false, false, true, false},
		},
		{
			name: "another action in between starts the count again",
			turns: []llm.Turn{
				reply("", agenttest.Bash("1", "ls")), reply("", agenttest.Bash("2", "ls")),
				reply("", agenttest.Bash("3", "pwd")),
				reply("", agenttest.Bash("4", "ls")), reply("", agenttest.Bash("5", "ls")),
				reply("", agenttest.Submit("6", "s")), reply("", agenttest.Submit("7", "s")),
			},
			want:      outcome{Status: agent.Submitted, Summary: "s", Steps: 7},
			wantNotes: []bool{false, false, false, false, false, false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := agenttest.New(nil)
			env.SetPatch(tt.patch)
			env.SetSubmitRefusal(tt.refuse)
			model := llm.NewScripted("test", false, tt.turns...)
			a, err := agent.New(model, env, agent.WithConfig(limits(75)))
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
			var notes []bool
			for _, o := range observations(model.Calls()) {
				notes = append(notes, strings.Contains(o, repeatNote))
			}
			if diff := cmp.Diff(tt.wantNotes, notes); diff != "" {
				t.Errorf("observations with the note to change approach (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunBudgetNotes(t *testing.T) {
	t.Run("80% of the steps", func(t *testing.T) {
		var turns []llm.Turn
		for i := range 10 {
			turns = append(turns, reply("", agenttest.Bash(fmt.Sprint(i), fmt.Sprintf("cat file%d", i))))
		}
		model := llm.NewScripted("test", false, turns...)
		a, err := agent.New(model, agenttest.New(nil), agent.WithConfig(limits(10)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Run(context.Background(), task); err != nil {
			t.Fatal(err)
		}
		const note = "\n\n[Note from the harness: you have used 8 of your 10 steps; 2 left."
		for i, o := range observations(model.Calls()) {
			if got, want := strings.Contains(o, note), i == 7; got != want {
				t.Errorf("observation of step %d carries the step note: %v, want %v\n%s", i+1, got, want, o)
			}
		}
	})
	t.Run("80% of the time", func(t *testing.T) {
		clk := newClock()
		env := agenttest.New(map[string]agenttest.Command{"slow": {Do: func(context.Context) (agent.Observation, error) {
			clk.Advance(3 * time.Minute)
			return agent.Observation{Output: fmt.Sprint(clk.Now())}, nil
		}}})
		var turns []llm.Turn
		for i := range 4 {
			turns = append(turns, reply("", agenttest.Bash(fmt.Sprint(i), "slow")))
		}
		model := llm.NewScripted("test", false, turns...)
		cfg := limits(10)
		cfg.MaxDuration = 10 * time.Minute
		a, err := agent.New(model, env, agent.WithConfig(cfg), agent.WithClock(clk.Now))
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Run(context.Background(), task)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != agent.LimitsExceeded {
			t.Errorf("status %s, want the time limit reached", res.Status)
		}
		const note = "[Note from the harness: 80% of your time limit of 10 minutes is used; 1 minute left."
		for i, o := range observations(model.Calls()) {
			// Step 4 starts at 9 minutes, the first past 80% of 10.
			if got, want := strings.Contains(o, note), i == 3; got != want {
				t.Errorf("observation of step %d (started at %d minutes) carries the time note: %v, want %v\n%s", i+1, 3*i, got, want, o)
			}
		}
	})
}

// limitedEnv is an Env that tells the prompts its command limits.
type limitedEnv struct{ *agenttest.Env }

func (limitedEnv) CommandLimits() agent.CommandLimits {
	return agent.CommandLimits{Timeout: 2 * time.Minute, OutputCap: 5000}
}

func TestRunSystemPromptShowsTheLimits(t *testing.T) {
	model := llm.NewScripted("test", false, reply("", agenttest.Submit("1", "s")), reply("", agenttest.Submit("2", "s")))
	cfg := limits(30)
	cfg.MaxDuration = 20 * time.Minute
	a, err := agent.New(model, limitedEnv{agenttest.New(nil)}, agent.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	system := model.Calls()[0].Messages[0].Content
	for _, want := range []string{
		"Every command has a time limit of 2 minutes, and output longer than 5000 characters is cut",
		"You have 30 steps (each of your replies is one step) and 20 minutes for this task.",
	} {
		if !strings.Contains(system, want) {
			t.Errorf("the system prompt lacks %q:\n%s", want, system)
		}
	}
}

func TestRunTimeLimitBoundsTheStep(t *testing.T) {
	const limit = 50 * time.Millisecond
	hanging := func(deadline *bool) llm.Turn {
		return llm.Turn{Do: func(ctx context.Context, _ []agent.Message) (agent.Reply, error) {
			_, *deadline = ctx.Deadline()
			<-ctx.Done()
			return agent.Reply{}, fmt.Errorf("post chat completion: %w", ctx.Err())
		}}
	}
	tests := []struct {
		name     string
		turns    func(deadline *bool) []llm.Turn
		commands func(deadline *bool) map[string]agenttest.Command
		patch    string
		want     outcome
	}{
		{
			name:  "a model that never answers",
			turns: func(d *bool) []llm.Turn { return []llm.Turn{hanging(d)} },
			want:  outcome{Status: agent.LimitsExceeded, Steps: 1, Reason: "time limit reached: 50ms elapsed of 50ms"},
		},
		{
			name:  "a model that never answers, after a change",
			turns: func(d *bool) []llm.Turn { return []llm.Turn{hanging(d)} },
			patch: patch,
			want: outcome{Status: agent.Autosubmitted, Cause: agent.LimitsExceeded, Patch: patch, Steps: 1,
				Reason: "limits_exceeded: time limit reached: 50ms elapsed of 50ms"},
		},
		{
			name:  "a command that never ends",
			turns: func(*bool) []llm.Turn { return []llm.Turn{reply("", agenttest.Bash("1", "sleep infinity"))} },
			commands: func(d *bool) map[string]agenttest.Command {
				return map[string]agenttest.Command{"sleep infinity": {Do: func(ctx context.Context) (agent.Observation, error) {
					_, *d = ctx.Deadline()
					<-ctx.Done()
					return agent.Observation{}, fmt.Errorf("command killed: %w", context.Cause(ctx))
				}}}
			},
			want: outcome{Status: agent.LimitsExceeded, Steps: 1, Reason: "time limit reached: 50ms elapsed of 50ms"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var deadline bool
			var commands map[string]agenttest.Command
			if tt.commands != nil {
				commands = tt.commands(&deadline)
			}
			env := agenttest.New(commands)
			env.SetPatch(tt.patch)
			var hookErrs []error
			var mu sync.Mutex
			hooks := agent.Hooks{OnStepDone: func(ctx context.Context, _ agent.Step) error {
				mu.Lock()
				defer mu.Unlock()
				hookErrs = append(hookErrs, ctx.Err())
				return nil
			}}
			cfg := limits(10)
			cfg.MaxDuration = limit
			clk := newClock() // stands still: the reason cannot depend on the machine's speed
			model := llm.NewScripted("test", false, tt.turns(&deadline)...)
			a, err := agent.New(model, env, agent.WithConfig(cfg), agent.WithClock(clk.Now), agent.WithHooks(hooks))
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
			if !deadline {
				t.Error("the step's context had no deadline")
			}
			if diff := cmp.Diff([]error{nil}, hookErrs); diff != "" {
				t.Errorf("OnStepDone's context errors (-want +got): the hooks outlive the time limit\n%s", diff)
			}
			for i, d := range env.Diffs() {
				if d.CtxErr != nil || !d.Deadline {
					t.Errorf("diff %d: context error %v, deadline %v; want a live context with a deadline", i, d.CtxErr, d.Deadline)
				}
			}
		})
	}
}

// TestRunTimeLimitBoundsAProviderRequest runs the real OpenAI-compatible
// client against a server that never answers.
func TestRunTimeLimitBoundsAProviderRequest(t *testing.T) {
	t.Parallel()
	received := make(chan struct{}, 10)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release) // before Close, which waits for the handler
	rec := &deadlineRecorder{}
	model, err := llm.New("openai/gpt-5", llm.Options{APIKey: "k", BaseURL: srv.URL + "/v1", Getenv: func(string) string { return "" },
		HTTPClient: &http.Client{Transport: rec}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := limits(10)
	cfg.MaxDuration = 100 * time.Millisecond
	a, err := agent.New(model, agenttest.New(nil), agent.WithConfig(cfg), agent.WithClock(newClock().Now))
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	res, err := a.Run(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	want := outcome{Status: agent.LimitsExceeded, Steps: 1, Reason: "time limit reached: 100ms elapsed of 100ms"}
	if diff := cmp.Diff(want, outcomeOf(res)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	// On a loaded machine the limit may pass before the request reaches
	// the server; either way it is never retried.
	if len(received) > 1 {
		t.Errorf("the server got %d requests, want at most 1 (no retry after the time limit)", len(received))
	}
	// The run's deadline fired before Run returned; the request timeout
	// alone would have put the deadline 10 minutes after the start.
	ended := time.Now()
	got := rec.Deadlines()
	if len(got) > 1 {
		t.Errorf("request deadlines %v, want at most one request", got)
	}
	for _, d := range got {
		if d.IsZero() || d.After(ended) || !d.Before(started.Add(llm.DefaultRequestTimeout)) {
			t.Errorf("request deadline %v, want one at the run's time limit, before the run ended (%v)", d, ended)
		}
	}
}

// deadlineRecorder is an http.RoundTripper that records the deadline of
// each request's context.
type deadlineRecorder struct {
	mu  sync.Mutex
	got []time.Time
}

func (d *deadlineRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	dl, _ := r.Context().Deadline()
	d.mu.Lock()
	d.got = append(d.got, dl)
	d.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (d *deadlineRecorder) Deadlines() []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.got...)
}

func TestRunCancelledBeforeTheTimeLimit(t *testing.T) {
	// A cancellation of Run's context is still a cancellation, not the
	// time limit, even with a time limit set.
	ctx, cancel := context.WithCancelCause(context.Background())
	model := llm.NewScripted("test", false, llm.Turn{Do: func(c context.Context, _ []agent.Message) (agent.Reply, error) {
		cancel(errors.New("stopped by @alice"))
		<-c.Done()
		return agent.Reply{}, c.Err()
	}})
	cfg := limits(10)
	cfg.MaxDuration = time.Hour
	a, err := agent.New(model, agenttest.New(nil), agent.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(outcome{Status: agent.Cancelled, Reason: "stopped by @alice", Steps: 1}, outcomeOf(res)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}
