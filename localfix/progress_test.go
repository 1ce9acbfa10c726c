package localfix

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func toolCall(name string, args map[string]string) agent.ToolCall {
	raw, _ := json.Marshal(args)
	return agent.ToolCall{ID: "call", Name: name, Arguments: raw}
}

// TestProgressGolden renders everything bot fix prints for people: the
// start, setup commands, each kind of step and the summaries.
func TestProgressGolden(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	p := &progress{w: &b, maxSteps: 75}
	p.start(fixStart{
		RunID: "20260102T030405Z-0123abcd", Model: "openai/gpt-5", Sandbox: "bwrap", Repo: "/home/me/calc", RepoName: "octo/calc",
		Head: "0ce1f11cd789aa7c1f9b3c0e6f3d2b1a00000000", Out: "/home/me/agentfix-runs/20260102T030405Z-0123abcd",
		Setup: []string{"go mod download"}, Test: "go test ./...",
		Notes: []string{"2 uncommitted changes in the checkout are not part of the run: the agent works on a copy of HEAD"},
	})
	p.setupStart("go mod download")
	p.setupDone(0, false, 2345*time.Millisecond, "")
	p.setupStart("make deps")
	p.setupDone(2, false, 512*time.Millisecond, "cc -o x x.c\n\x1b[31mx.c:1: error: oops\x1b[0m\nmake: *** [deps] Error 1\n")
	steps := []agent.Step{
		{Step: 1, TotalCostUSD: 0.0021, Messages: []agent.Message{{}}, Actions: []agent.ToolCall{
			toolCall("str_replace_editor", map[string]string{"command": "view", "path": "/workspace/calc.go"})},
			Observations: []agent.Observation{{Output: "..."}}},
		{Step: 2, TotalCostUSD: 0.0042, Messages: []agent.Message{{}}, Actions: []agent.ToolCall{
			toolCall("bash", map[string]string{"command": "go test ./... \x1b]0;pwned\x07&& echo \u202eok"}),
			toolCall("bash", map[string]string{"command": "git status"})},
			Observations: []agent.Observation{{}, {}}},
		{Step: 3, TotalCostUSD: 0.0063, Messages: []agent.Message{{}, {}}, FormatError: "format error: unknown tool \"shell\""},
		{Step: 10, TotalCostUSD: 0.0105, Messages: []agent.Message{{}}, Actions: []agent.ToolCall{toolCall("submit", map[string]string{"summary": "x"})},
			Observations: []agent.Observation{{Submitted: true}}},
		{Step: 11, TotalCostUSD: 0.0105},
	}
	for _, s := range steps {
		p.step(s)
	}
	p.summary(fixSummary{
		Result: agent.Result{RunID: "20260102T030405Z-0123abcd", Status: agent.Submitted, Summary: "Add adds now.\nVerified with go test ./...",
			Steps: 10, Usage: agent.Usage{InputTokens: 1200, OutputTokens: 300, CacheReadTokens: 9000, CacheWriteTokens: 800},
			CostUSD: 0.0105, Duration: 83456 * time.Millisecond},
		Patch: "/home/me/agentfix-runs/20260102T030405Z-0123abcd/patch.diff", PatchFiles: 1, PatchSubmitted: true,
		Trajectory: "/home/me/agentfix-runs/20260102T030405Z-0123abcd/trajectory.jsonl",
		Applied:    "applied to the working tree of /home/me/calc (not committed)",
	})
	p = &progress{w: &b}
	p.step(agent.Step{Step: 4, TotalCostUSD: 0.5, Messages: []agent.Message{{}}, Actions: []agent.ToolCall{toolCall("bash", map[string]string{"command": "ls"})}})
	p.summary(fixSummary{
		Result: agent.Result{RunID: "20260102T030405Z-0123abcd", Status: agent.Cancelled, Reason: "context canceled", Steps: 4,
			CostUSD: 0.5, Duration: 1500 * time.Microsecond},
		Patch: "/out/patch.diff", PatchFiles: 2, Trajectory: "/out/trajectory.jsonl", Applied: "not applied: the agent did not submit",
		ApplyCommand: "git -C /home/me/calc apply /out/patch.diff",
	})
	p.summary(fixSummary{Result: agent.Result{RunID: "20260102T030405Z-0123abcd", Status: agent.LimitsExceeded,
		Reason: "step limit reached: 75 of 75 steps", Steps: 75}, Patch: "/out/patch.diff", Trajectory: "/out/trajectory.jsonl"})
	p.summary(fixSummary{Result: agent.Result{RunID: "20260102T030405Z-0123abcd", Status: agent.Submitted, Steps: 2, CostUSD: 0.01},
		Patch: "/out/patch.diff", PatchFiles: 1, PatchSubmitted: true, Trajectory: "/out/trajectory.jsonl",
		ApplyCommand: "git apply /out/patch.diff", BareRepo: "/srv/git/calc.git"})

	// A replay calls no model: no cost per step, $0.00 spent.
	p = &progress{w: &b, maxSteps: 75, replay: "/home/me/agentfix-runs/20260101T000000Z-00000000/trajectory.jsonl"}
	p.start(fixStart{RunID: "20260102T030405Z-4567cdef", Model: "replay/openai/gpt-5", Sandbox: "bwrap", Repo: "/home/me/calc", RepoName: "octo/calc",
		Head: "0ce1f11cd789aa7c1f9b3c0e6f3d2b1a00000000", Out: "/home/me/agentfix-runs/20260102T030405Z-4567cdef"})
	p.step(steps[0])
	p.step(steps[3])
	p.summary(fixSummary{
		Result: agent.Result{RunID: "20260102T030405Z-4567cdef", Status: agent.Submitted, Steps: 10,
			Usage: agent.Usage{InputTokens: 1200, OutputTokens: 300}, CostUSD: 0.0105, Duration: 2 * time.Second},
		Patch: "/home/me/my runs/patch.diff", PatchFiles: 1, PatchSubmitted: true, Trajectory: "/home/me/my runs/trajectory.jsonl",
		ApplyCommand: "git -C /home/me/calc apply " + shellQuote("/home/me/my runs/patch.diff"),
	})

	got := b.String()
	golden := filepath.Join("testdata", "progress.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("progress output differs from %s (-want +got):\n%s", golden, diff)
	}
	for _, bad := range []string{"\x1b", "\x07", "\u202e"} {
		if strings.Contains(got, bad) {
			t.Errorf("the output carries the control character %q", bad)
		}
	}
}

func TestParseIssue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text, title, body string
	}{
		{"title line", "# Add subtracts\n\nAdd(1, 2) returns -1.\n", "Add subtracts", "Add(1, 2) returns -1."},
		{"blank lines and BOM first", "\uFEFF\n\n# Title\r\nBody\r\n", "Title", "Body"},
		{"title only", "# Only a title", "Only a title", ""},
		{"no title line", "Add(1, 2) returns -1.\n\nIt should be 3.", "Add(1, 2) returns -1.", "Add(1, 2) returns -1.\n\nIt should be 3."},
		{"second-level heading is not a title", "## Steps\n1. run", "Steps", "## Steps\n1. run"},
		{"long first line", strings.Repeat("x", 150), strings.Repeat("x", 99) + "…", strings.Repeat("x", 150)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			title, body := parseIssue(tt.text)
			if title != tt.title || body != tt.body {
				t.Errorf("parseIssue(%q) = %q, %q; want %q, %q", tt.text, title, body, tt.title, tt.body)
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"/home/me/calc", "/home/me/calc"},
		{"/tmp/x_1-2/a.b@c%d+e=f:g,h", "/tmp/x_1-2/a.b@c%d+e=f:g,h"},
		{"/home/me/my runs/patch.diff", "'/home/me/my runs/patch.diff'"},
		{"/home/me/it's/patch.diff", `'/home/me/it'\''s/patch.diff'`},
		{"$HOME/*.diff", "'$HOME/*.diff'"},
		{"", "''"},
	} {
		if got := shellQuote(tt.in); got != tt.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
