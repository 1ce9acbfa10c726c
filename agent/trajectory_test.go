package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/agenttest"
	"github.com/agentfix/agentfix/agent/llm"
)

// recordedRun runs a short scripted task, writing its trajectory through a
// buffered writer to a file, and returns the file's path, the steps the
// hook saw and the result.
func recordedRun(t *testing.T) (string, []agent.Step, agent.Result, *llm.Scripted) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trajectory.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []agent.Step
	hooks := agent.Hooks{OnStepDone: func(_ context.Context, s agent.Step) error {
		steps = append(steps, s)
		// The step's record is on disk before OnStepDone runs.
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if got, want := strings.Count(string(b), "\n"), 1+s.Step; got != want {
			t.Errorf("after step %d the file has %d lines, want %d", s.Step, got, want)
		}
		return nil
	}}
	model := llm.NewScripted("test", false,
		reply("edit", agenttest.Bash("1", "edit x.go")),
		reply("oops"),
		reply("submit", agenttest.Submit("2", "s")),
		reply("submit", agenttest.Submit("3", "Fixed x <b>&</b>.")),
	)
	a, err := agent.New(model, fakeEnv(), agent.WithConfig(limits(10)), agent.WithHooks(hooks),
		agent.WithTrajectory(bufio.NewWriter(f)), agent.WithRunID("run-1"), agent.WithClock(newClock().Now))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	return path, steps, res, model
}

func fakeEnv() *agenttest.Env {
	return agenttest.New(map[string]agenttest.Command{"edit x.go": {Output: "edited", Patch: patch}})
}

func TestTrajectoryRoundTrip(t *testing.T) {
	path, steps, res, model := recordedRun(t)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := agent.ReadTrajectory(f)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Truncated {
		t.Error("Truncated is set for a complete file")
	}
	h := tr.Header
	if h.V != agent.TrajectoryVersion || h.RunID != "run-1" || h.Model != "scripted/test" || len(h.Messages) != 2 || len(h.Tools) != 2 {
		t.Errorf("header: v=%d run=%q model=%q messages=%d tools=%d; want 1, run-1, scripted/test, 2, 2",
			h.V, h.RunID, h.Model, len(h.Messages), len(h.Tools))
	}
	if diff := cmp.Diff(task, h.Task); diff != "" {
		t.Errorf("header task (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(limits(10), h.Config); diff != "" {
		t.Errorf("header config (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(steps, tr.Steps); diff != "" {
		t.Errorf("steps read back (-hook saw +file):\n%s", diff)
	}
	if tr.Result == nil {
		t.Fatal("no result record")
	}
	if diff := cmp.Diff(res, *tr.Result); diff != "" {
		t.Errorf("result read back (-Run returned +file):\n%s", diff)
	}
	calls := model.Calls()
	last := calls[len(calls)-1].Messages
	msgs := tr.Messages()
	if diff := cmp.Diff(last, msgs[:len(last)]); diff != "" {
		t.Errorf("history read back (-last query +file):\n%s", diff)
	}
	if got := tr.Steps[1].FormatError; got != "format error: found 0 bash blocks, want exactly one" {
		t.Errorf("step 2 format error %q", got)
	}
}

func TestTrajectoryReplay(t *testing.T) {
	path, _, res, model := recordedRun(t)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := agent.ReadTrajectory(f)
	if err != nil {
		t.Fatal(err)
	}
	replay, err := llm.NewReplay(tr)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(replay, fakeEnv(), agent.WithConfig(limits(10)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Run(context.Background(), tr.Header.Task)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(outcomeOf(res), outcomeOf(got)); diff != "" {
		t.Errorf("replayed result (-recorded +replayed):\n%s", diff)
	}
	if got.CostUSD != res.CostUSD || got.Usage != res.Usage {
		t.Errorf("replayed totals %v %+v, recorded %v %+v", got.CostUSD, got.Usage, res.CostUSD, res.Usage)
	}
	want, gotCalls := model.Calls(), replay.Calls()
	if diff := cmp.Diff(want[len(want)-1].Messages, gotCalls[len(gotCalls)-1].Messages); diff != "" {
		t.Errorf("replayed history (-recorded +replayed):\n%s", diff)
	}
	if replay.Name() != "replay/scripted/test" {
		t.Errorf("replay name %q", replay.Name())
	}
}

func TestTrajectoryTruncatedLastLine(t *testing.T) {
	path, steps, _, _ := recordedRun(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines = lines[:len(lines)-1] // the empty string after the last newline
	tests := []struct {
		name      string
		text      string
		steps     int
		result    bool
		truncated bool
	}{
		{"result cut mid-write", strings.Join(lines[:len(lines)-1], "") + lines[len(lines)-1][:40], len(steps), false, true},
		{"step cut mid-write", strings.Join(lines[:3], "") + lines[3][:len(lines[3])/2], 2, false, true},
		{"crash between records", strings.Join(lines[:3], ""), 2, false, false},
		{"result without its newline", strings.TrimSuffix(string(b), "\n"), len(steps), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := agent.ReadTrajectory(strings.NewReader(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Steps) != tt.steps || (tr.Result != nil) != tt.result || tr.Truncated != tt.truncated {
				t.Errorf("got %d steps, result %v, truncated %v; want %d, %v, %v",
					len(tr.Steps), tr.Result != nil, tr.Truncated, tt.steps, tt.result, tt.truncated)
			}
		})
	}
}

func TestReadTrajectoryErrors(t *testing.T) {
	header := `{"type":"header","v":1,"run_id":"r","model":"m","task":{"repo":"o/r","title":"t","body":""},"config":{},"messages":[]}` + "\n"
	step := `{"type":"step","step":1,"messages":[]}` + "\n"
	result := `{"type":"result","run_id":"r","exit_status":"submitted","steps":1}` + "\n"
	tests := []struct {
		name string
		text string
		want string
	}{
		{"empty", "", "read trajectory: no header record"},
		{"only a cut header", header[:30], "read trajectory: no header record"},
		{"step first", step, "trajectory line 1: step record; the header must be the first line and only there"},
		{"second header", header + header, "trajectory line 2: header record; the header must be the first line and only there"},
		{"newer version", strings.Replace(header, `"v":1`, `"v":2`, 1), "trajectory line 1: version 2, this program reads version 1"},
		{"unknown type", header + `{"type":"comment"}` + "\n", `trajectory line 2: unknown record type "comment"`},
		{"malformed middle line", header + `{"type":"step",` + "\n" + step, "trajectory line 2: unexpected end of JSON input"},
		{"malformed complete last line", header + `{"type":"step","step":"one"}` + "\n", "trajectory line 2: json: cannot unmarshal string into Go struct field Step.step of type int"},
		{"record after the result", header + step + result + step, "trajectory line 4: step record after the result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agent.ReadTrajectory(bytes.NewReader([]byte(tt.text)))
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}
