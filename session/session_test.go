package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/llm"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// newRepo makes a git repository with one commit of files.
func newRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// workTree makes a working copy of repo.
func workTree(t *testing.T, repo string) *workspace.WorkTree {
	t.Helper()
	wt, err := workspace.NewWorkTreeFromRepo(context.Background(), repo, workspace.WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wt.Remove() })
	return wt
}

func bwrap(o workspace.Options) (tools.Sandbox, error) { return workspace.NewBwrap(o) }

// call is a scripted tool call.
func call(id, name string, args any) llm.Turn {
	b, _ := json.Marshal(args)
	return llm.Turn{Reply: agent.Reply{
		Message:      agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: id, Name: name, Arguments: b}}},
		FinishReason: agent.FinishToolCalls,
	}}
}

// recorder records what the hooks saw.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, s)
}

func (r *recorder) hooks() Hooks {
	return Hooks{
		OnSetup:      func(_ context.Context, c string) { r.add("setup " + c) },
		OnSetupDone:  func(_ context.Context, c string, res workspace.Result) { r.add("setup done " + c) },
		OnAgentStart: func(context.Context) { r.add("agent") },
		Agent: []agent.Hooks{{OnStepDone: func(_ context.Context, s agent.Step) error {
			r.add("step " + s.LastAction())
			return nil
		}}},
	}
}

// TestRunSetupThenAgent runs a whole session: setup leaves a file in the
// cache, the agent fixes the bug, the review runs the test command on the
// change, the agent submits.
func TestRunSetupThenAgent(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"calc.sh": "echo $((2 - 2))\n", "test.sh": "test \"$(sh calc.sh)\" = 4\n"})
	wt := workTree(t, repo)
	model := llm.NewScripted("fix", false,
		call("1", "bash", map[string]string{"command": "cat $HOME/setup-was-here"}),
		call("2", "str_replace_editor", map[string]string{"command": "str_replace", "path": "calc.sh", "old_str": "2 - 2", "new_str": "2 + 2"}),
		call("3", "submit", map[string]string{"summary": "Adds instead of subtracting."}),
		call("4", "submit", map[string]string{}),
	)
	rec := &recorder{}
	res, err := Run(context.Background(), Options{
		WorkTree: wt, Sandbox: bwrap, Model: model, RunID: "r1",
		Settings: Settings{Setup: []string{"echo ok > $HOME/setup-was-here"}, Test: "sh test.sh", Limits: agent.Config{MaxSteps: 10}},
		Task:     agent.Task{Repo: "octo/calc", Title: "2+2 is 0"},
		Hooks:    rec.hooks(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Agent.Status != agent.Submitted || !strings.Contains(res.Agent.Patch, "+echo $((2 + 2))") {
		t.Errorf("result = %s, patch:\n%s", res.Agent.Status, res.Agent.Patch)
	}
	if res.Review.Rounds != 1 || res.Review.Test == nil || res.Review.TestFailed() || !res.Review.TestedFinal {
		t.Errorf("review = %+v, want one round with the test passing on the final change", res.Review)
	}
	want := []string{"setup echo ok > $HOME/setup-was-here", "setup done echo ok > $HOME/setup-was-here", "agent"}
	if got := rec.events[:3]; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("first events = %q, want %q", got, want)
	}
	if len(rec.events) != 3+4 {
		t.Errorf("events = %q, want setup, agent and four steps", rec.events)
	}
}

// TestRunSetupFails ends before the agent with a *SetupError, and the
// model is never asked.
func TestRunSetupFails(t *testing.T) {
	t.Parallel()
	wt := workTree(t, newRepo(t, map[string]string{"a": "a\n"}))
	model := llm.NewScripted("never", false)
	_, err := Run(context.Background(), Options{
		WorkTree: wt, Sandbox: bwrap, Model: model,
		Settings: Settings{Setup: []string{"true", "echo broken >&2; exit 3", "touch never"}},
		Task:     agent.Task{Repo: "octo/a", Title: "t"},
	})
	var se *SetupError
	if !errors.As(err, &se) || se.Command != "echo broken >&2; exit 3" || se.Result.ExitCode != 3 || !strings.Contains(se.Result.Output, "broken") {
		t.Fatalf("Run = %v, want the second command's *SetupError", err)
	}
	if n := len(model.Calls()); n != 0 {
		t.Errorf("the model was asked %d times, want 0", n)
	}
}

// TestRunSetupDeadline: the setup commands share one deadline; a clock
// past it times the next command out without running it.
func TestRunSetupDeadline(t *testing.T) {
	t.Parallel()
	wt := workTree(t, newRepo(t, map[string]string{"a": "a\n"}))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := start
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	hooks := Hooks{OnSetupDone: func(context.Context, string, workspace.Result) {
		mu.Lock()
		now = now.Add(time.Hour) // the first command "took" an hour
		mu.Unlock()
	}}
	_, err := Run(context.Background(), Options{
		WorkTree: wt, Sandbox: bwrap, Model: llm.NewScripted("never", false), Now: clock, Hooks: hooks,
		Settings: Settings{Setup: []string{"true", "touch ran"}, SetupTimeout: time.Minute},
		Task:     agent.Task{Repo: "octo/a", Title: "t"},
	})
	var se *SetupError
	if !errors.As(err, &se) || se.Command != "touch ran" || !se.Result.TimedOut {
		t.Fatalf("Run = %v, want the second command timed out", err)
	}
	if _, err := os.Stat(filepath.Join(wt.Dir(), "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command past the deadline ran (stat: %v)", err)
	}
}

// TestRunSetupOnTheDefaultBranch is the red team's High finding at the
// session: in a round, whose working copy is the bot's branch with files
// the agent wrote, setup runs on the files of Settings.SetupCommit (the
// default branch's head), and the round's files are back for the agent
// afterwards (workspace's TestWithTree swaps the trees).
func TestRunSetupOnTheDefaultBranch(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"scripts/setup.sh": "echo trusted > \"$HOME/who\"\n"})
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	main := git("rev-parse", "HEAD")
	git("checkout", "-q", "-b", "agent-fix/issue-1")
	if err := os.WriteFile(filepath.Join(repo, "scripts", "setup.sh"), []byte("echo written by the agent > \"$HOME/who\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("commit", "-q", "-am", "round 1")
	var seen string
	_, err := Run(context.Background(), Options{
		WorkTree: workTree(t, repo), Sandbox: bwrap,
		Model: llm.NewScripted("round", false, call("1", "bash", map[string]string{"command": `cat "$HOME/who"; cat scripts/setup.sh`}),
			call("2", "submit", map[string]string{"summary": "s"}), call("3", "submit", map[string]string{})),
		Settings: Settings{Setup: []string{"sh scripts/setup.sh"}, SetupCommit: main, Limits: agent.Config{MaxSteps: 5}},
		Task:     agent.Task{Repo: "octo/calc", Title: "t"},
		Hooks: Hooks{Agent: []agent.Hooks{{OnStepDone: func(_ context.Context, s agent.Step) error {
			if s.Step == 1 && len(s.Observations) == 1 {
				seen = s.Observations[0].Output
			}
			return nil
		}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "trusted\necho written by the agent > \"$HOME/who\"\n"; !strings.Contains(seen, want) {
		t.Errorf("the agent saw %q, want %q: setup ran the agent's script, or the round's files were not put back", seen, want)
	}
}

// TestRunNeedsItsParts refuses options without a tree, sandbox or model.
func TestRunNeedsItsParts(t *testing.T) {
	t.Parallel()
	if _, err := Run(context.Background(), Options{}); err == nil {
		t.Error("Run without options succeeded")
	}
}

// TestReadInstructions reads the instructions files of a commit: AGENTS.md
// wins at the root, nested AGENTS.md files are found by directory, and a
// symbolic link is never followed.
func TestReadInstructions(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{
		"AGENTS.md": "Run make test.\n", "CLAUDE.md": "not this one\n",
		"pkg/api/AGENTS.md": "Keep the API stable.\n", "docs/README.md": "x\n",
	})
	if err := os.MkdirAll(filepath.Join(repo, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(repo, "lib", "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "link"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	wt := workTree(t, repo)
	in, err := ReadInstructions(context.Background(), wt, wt.Base())
	if err != nil {
		t.Fatal(err)
	}
	if in.Root == nil || in.Root.Path != "AGENTS.md" || in.Root.Text != "Run make test.\n" {
		t.Errorf("root = %+v, want AGENTS.md", in.Root)
	}
	if len(in.Nested) != 1 || in.Nested["pkg/api"] != "Keep the API stable.\n" {
		t.Errorf("nested = %v, want pkg/api only", in.Nested)
	}
	if got := strings.Join(in.Names(), ","); got != "AGENTS.md,pkg/api/AGENTS.md" {
		t.Errorf("Names = %q", got)
	}
	empty := workTree(t, newRepo(t, map[string]string{".github/copilot-instructions.md": "Be brief.\n"}))
	in, err = ReadInstructions(context.Background(), empty, empty.Base())
	if err != nil || in.Root == nil || in.Root.Path != ".github/copilot-instructions.md" {
		t.Errorf("copilot instructions = %+v, %v", in.Root, err)
	}
}
