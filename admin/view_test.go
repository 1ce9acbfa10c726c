package admin

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/agenttest"
	"github.com/agentfix/agentfix/runs"
)

// step is a trajectory step with one action and its observation.
func step(n int, c agent.ToolCall, o agent.Observation) agent.Step {
	return agent.Step{Step: n, Actions: []agent.ToolCall{c}, Observations: []agent.Observation{o}}
}

func TestReviewStart(t *testing.T) {
	bash := func(n int) agent.Step { return step(n, agenttest.Bash("b", "ls"), agent.Observation{Output: "a.go"}) }
	review := agent.Observation{Output: "Review your change.\n\ndiff --git a/a.go b/a.go\n"}
	empty := agent.Observation{Output: "There is nothing to submit."}
	done := agent.Observation{Output: "Your change was submitted.", Submitted: true}
	submit := agenttest.Submit("s", "")
	tests := []struct {
		name  string
		steps []agent.Step
		want  int
	}{
		{"no submit", []agent.Step{bash(1), bash(2)}, 0},
		{"review then submit", []agent.Step{bash(1), step(2, submit, review), step(3, submit, done)}, 2},
		{"refusal before the review", []agent.Step{step(1, submit, empty), bash(2), step(3, submit, review), step(4, submit, done)}, 3},
		{"edits during the review", []agent.Step{bash(1), step(2, submit, review), bash(3), step(4, submit, review), step(5, submit, done)}, 2},
		{"review without a diff", []agent.Step{bash(1), step(2, submit, agent.Observation{Output: "Check your change."}), step(3, submit, done)}, 2},
		{"limit during the review", []agent.Step{bash(1), step(2, submit, review), bash(3)}, 2},
		{"submit that did not run", []agent.Step{{Step: 1, Actions: []agent.ToolCall{submit}}}, 0},
		{"format error step", []agent.Step{{Step: 1, FormatError: "no action"}, step(2, submit, review)}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reviewStart(tt.steps); got != tt.want {
				t.Errorf("reviewStart = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestDescribeCall(t *testing.T) {
	raw := func(name, args string) agent.ToolCall {
		return agent.ToolCall{ID: "x", Name: name, Arguments: json.RawMessage(args)}
	}
	tests := []struct {
		name string
		call agent.ToolCall
		want call
	}{
		{"bash", agenttest.Bash("1", "go test ./..."), call{Tool: "bash", Command: "go test ./..."}},
		{"editor str_replace", raw("str_replace_editor", `{"command":"str_replace","path":"a.go","new_str":"b","old_str":"a"}`),
			call{Tool: "str_replace_editor", Editor: "str_replace", Path: "a.go", Args: []arg{{"old_str", "a", true}, {"new_str", "b", true}}}},
		{"editor view range", raw("str_replace_editor", `{"command":"view","path":"a.go","view_range":[1, -1]}`),
			call{Tool: "str_replace_editor", Editor: "view", Path: "a.go", Args: []arg{{"view_range", "[1,-1]", false}}}},
		{"editor insert", raw("str_replace_editor", `{"command":"insert","path":"a.go","insert_line":3,"new_str":"x"}`),
			call{Tool: "str_replace_editor", Editor: "insert", Path: "a.go", Args: []arg{{"insert_line", "3", false}, {"new_str", "x", true}}}},
		{"submit", agenttest.Submit("1", "Fixed it."), call{Tool: "submit", Args: []arg{{"summary", "Fixed it.", true}}}},
		{"bash without a string command", raw("bash", `{"command":["ls"]}`), call{Tool: "bash", Args: []arg{{"command", `["ls"]`, false}}}},
		{"arguments not an object", raw("bash", `"ls"`), call{Tool: "bash", BadArgs: `"ls"`}},
		{"arguments not JSON", raw("bash", `{ls`), call{Tool: "bash", BadArgs: `{ls`}},
		{"unknown tool", raw("grep", `{"pattern":"x","path":"."}`), call{Tool: "grep", Args: []arg{{"path", ".", false}, {"pattern", "x", true}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, describeCall(tt.call)); diff != "" {
				t.Errorf("describeCall (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseDiff(t *testing.T) {
	patch := "diff --git a/x b/x\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/x\n@@ -0,0 +1,3 @@\n+a\n++ b\n+--- c\ndiff --git a/y b/y\n--- a/y\n+++ b/y\n@@ -1,3 +1,2 @@\n keep\n--- gone\n-also gone\n"
	got := parseDiff(patch)
	want := diffView{Files: 2, Added: 3, Gone: 2, Lines: []diffLine{
		{"file", "diff --git a/x b/x"}, {"file", "new file mode 100644"}, {"file", "index 0000000..1111111"},
		{"file", "--- /dev/null"}, {"file", "+++ b/x"}, {"hunk", "@@ -0,0 +1,3 @@"},
		{"add", "+a"}, {"add", "++ b"}, {"add", "+--- c"},
		{"file", "diff --git a/y b/y"}, {"file", "--- a/y"}, {"file", "+++ b/y"}, {"hunk", "@@ -1,3 +1,2 @@"},
		{"ctx", " keep"}, {"del", "--- gone"}, {"del", "-also gone"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseDiff (-want +got):\n%s", diff)
	}
	if got := parseDiff(""); len(got.Lines) != 0 {
		t.Errorf("parseDiff(\"\") = %v, want no lines", got)
	}
}

func TestBuildRunViewWithoutTrajectory(t *testing.T) {
	tests := []struct {
		name, status, traj string
		wantErr, wantNote  string
	}{
		{"running, none yet", runs.StatusRunning, "", "", noTrajectoryYet},
		{"ended, none recorded", "failed", "", noTrajectory, ""},
		{"unreadable", runs.StatusRunning, `{"type":"step","step":1}` + "\n", "The trajectory could not be read: trajectory line 1: step record; the header must be the first line and only there", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := runs.Meta{RunID: testRunID, Status: tt.status, Started: t0}
			if tt.status != runs.StatusRunning {
				m.Ended = t0.Add(time.Minute)
			}
			rec := runs.Record{Meta: m, Trajectory: []byte(tt.traj), Patch: testPatch}
			v := buildRunView(rec, "", t0.Add(time.Minute))
			if v.TrajectoryError != tt.wantErr || v.TrajectoryNote != tt.wantNote {
				t.Errorf("TrajectoryError, TrajectoryNote = %q, %q; want %q, %q", v.TrajectoryError, v.TrajectoryNote, tt.wantErr, tt.wantNote)
			}
			if v.WallTime != time.Minute {
				t.Errorf("wall time = %s, want 1m0s (to the end, or to now while it runs)", v.WallTime)
			}
			if want := tt.status == runs.StatusRunning; v.Running != want || (v.WallTimeNote == wallTimeRunning) != want {
				t.Errorf("running %v, wall time note %q; want running %v", v.Running, v.WallTimeNote, want)
			}
			if v.Diff.Files != 1 {
				t.Errorf("the diff is not shown without a trajectory: %+v", v.Diff)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	tests := []struct{ got, want string }{
		{usd(0), "$0.00"},
		{usd(0.0042), "$0.0042"},
		{usd(2.5), "$2.50"},
		{count(0), "0"},
		{count(999), "999"},
		{count(1000), "1,000"},
		{count(1234567), "1,234,567"},
		{count(-1234), "-1,234"},
		{days(336 * time.Hour), "14 days"},
		{days(24 * time.Hour), "1 day"},
		{days(90 * time.Minute), "1 h 30 min"},
		{when(time.Time{}), "–"},
		{when(t0.In(time.FixedZone("X", 3600))), "2025-01-02 15:04:05 UTC"},
		{targetURL("https://github.com/", runs.Meta{Kind: "revise", Repo: "o/r", Number: 3}), "https://github.com/o/r/pull/3"},
		{targetURL("", runs.Meta{Kind: "fix", Repo: "o/r", Number: 3}), ""},
		{targetURL("https://github.com/", runs.Meta{Kind: "ci", Repo: "o/r", Number: 3}), "https://github.com/o/r/pull/3"},
		{targetURL("https://github.com/", runs.Meta{Kind: "conflict", Repo: "o/r", Number: 3}), "https://github.com/o/r/pull/3"},
		{target(runs.Meta{Kind: "ci", Number: 3}), "PR #3"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestDur(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "–"},
		{-time.Second, "–"},
		{300 * time.Microsecond, "<1 ms"},
		{250 * time.Millisecond, "250 ms"},
		{999600 * time.Microsecond, "1.0 s"},
		{1234567 * time.Microsecond, "1.2 s"},
		{9960 * time.Millisecond, "10 s"},
		{42 * time.Second, "42 s"},
		{59700 * time.Millisecond, "1 min"},
		{83*time.Second + 400*time.Millisecond, "1 min 23 s"},
		{4*time.Minute + 5*time.Second, "4 min 5 s"},
		{9*time.Minute + 59*time.Second + 600*time.Millisecond, "10 min"},
		{12*time.Minute + 29*time.Second, "12 min"},
		{12*time.Minute + 31*time.Second, "13 min"},
		{45 * time.Minute, "45 min"},
		{59*time.Minute + 45*time.Second, "1 h"},
		{65 * time.Minute, "1 h 5 min"},
		{26*time.Hour + 3*time.Minute, "26 h 3 min"},
	}
	for _, tt := range tests {
		if got := dur(tt.d); got != tt.want {
			t.Errorf("dur(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestDescribeCommandExit(t *testing.T) {
	tests := []struct {
		name string
		exit *agent.Exit
		want *exitView
	}{
		{"not a command", nil, nil},
		{"success", &agent.Exit{Code: 0}, &exitView{OK: true, Mark: "✓", Text: "exit 0"}},
		{"failure", &agent.Exit{Code: 2}, &exitView{Mark: "✗", Text: "exit 2"}},
		{"signal", &agent.Exit{Code: 137}, &exitView{Mark: "✗", Text: "exit 137"}},
		{"timeout", &agent.Exit{Code: -1, TimedOut: true}, &exitView{Mark: "✗", Text: "timed out"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, describeCommandExit(tt.exit)); diff != "" {
				t.Errorf("describeCommandExit (-want +got):\n%s", diff)
			}
		})
	}
}
