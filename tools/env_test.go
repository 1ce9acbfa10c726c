package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
)

func TestToolSpecs(t *testing.T) {
	e := newTestEnv(t, nil)
	specs := e.Tools()
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
		var schema map[string]any
		if err := json.Unmarshal(s.Parameters, &schema); err != nil {
			t.Errorf("%s: schema is not JSON: %v", s.Name, err)
		}
	}
	if strings.Join(names, ",") != "bash,str_replace_editor,submit" {
		t.Errorf("tool names %v, want bash, str_replace_editor, submit", names)
	}
	out, err := json.MarshalIndent(specs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "tools.json", string(out)+"\n")

	text := newTestEnv(t, func(o *Options) { o.TextMode = true })
	if got := text.Tools(); got != nil {
		t.Errorf("Tools() in text mode = %v, want nil", got)
	}
}

func TestBashTool(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.CommandTimeout = time.Second })
	steps := []struct{ title, command string }{
		{"output", "echo hello; echo err >&2"},
		{"no output", "true"},
		{"failure with output", "echo 'go: build failed'; exit 2"},
		{"failure without output", "exit 1"},
		{"timeout", "echo started; sleep 100"},
		{"interactive program refused", "vim calc/calc.go && touch ran"},
		{"empty command", "  "},
		{"state does not persist", "cd calc && export X=1; echo $X; pwd"},
		{"fresh shell", "echo \"X=$X\"; pwd"},
	}
	var transcript strings.Builder
	for _, s := range steps {
		transcript.WriteString("### " + s.title + "\n$ " + s.command + "\n" + e.bash(t, s.command) + "\n\n")
	}
	golden(t, "bash", transcript.String())
	if _, err := os.Stat(filepath.Join(e.wt.Dir(), "ran")); !os.IsNotExist(err) {
		t.Errorf("a refused command ran (err %v)", err)
	}
}

// TestBashExit checks that a command's observation records how it ended,
// and that a refused or empty command, which never ran, records nothing.
func TestBashExit(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.CommandTimeout = time.Second })
	tests := []struct {
		command string
		want    *agent.Exit
	}{
		{"true", &agent.Exit{Code: 0}},
		{"echo '[exit code 0]'; exit 3", &agent.Exit{Code: 3}},
		{"kill -TERM $$", &agent.Exit{Code: 128 + 15}},
		{"sleep 100", &agent.Exit{Code: -1, TimedOut: true}},
		{"vim calc/calc.go", nil},
		{"  ", nil},
	}
	for _, tt := range tests {
		obs := e.exec(t, call(BashTool, map[string]string{"command": tt.command}))
		if diff := cmp.Diff(tt.want, obs.Exit); diff != "" {
			t.Errorf("bash %q: Exit (-want +got):\n%s", tt.command, diff)
		}
	}
}

func TestToolOutputCap(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.OutputLimit = 100 })
	got := e.bash(t, "seq 1 1000")
	if len(got) > 200 || !strings.HasPrefix(got, "1\n2\n") || !strings.HasSuffix(got, "999\n1000\n[exit code 0]") || !strings.Contains(got, " bytes elided ...]") {
		t.Errorf("capped output:\n%s", got)
	}
}

func TestEnvDead(t *testing.T) {
	e := newTestEnv(t, nil)
	if err := os.RemoveAll(e.wt.Dir()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []agent.ToolCall{call(BashTool, map[string]string{"command": "ls"}), submitCall("")} {
		if _, err := e.Execute(context.Background(), c); !errors.Is(err, agent.ErrEnvDead) {
			t.Errorf("Execute(%s) with the working copy gone: err = %v, want agent.ErrEnvDead", c.Name, err)
		}
	}
	if _, err := e.Diff(context.Background()); !errors.Is(err, agent.ErrEnvDead) {
		t.Errorf("Diff with the working copy gone: err = %v, want agent.ErrEnvDead", err)
	}
}

func TestExecuteCancelled(t *testing.T) {
	e := newTestEnv(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Execute(ctx, call(BashTool, map[string]string{"command": "touch started; sleep 100"}))
		done <- err
	}()
	for {
		if _, err := os.Stat(filepath.Join(e.wt.Dir(), "started")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) || errors.Is(err, agent.ErrEnvDead) {
		t.Errorf("err = %v, want context.Canceled and not ErrEnvDead", err)
	}
}

func TestExecuteBadArguments(t *testing.T) {
	e := newTestEnv(t, nil)
	obs, err := e.Execute(context.Background(), agent.ToolCall{Name: "bash", Arguments: json.RawMessage(`{"cmd": "ls"}`)})
	if err != nil || !strings.Contains(obs.Output, `bash has no argument "cmd"`) {
		t.Errorf("Execute with bad arguments = %+v, %v; want an observation naming the argument", obs, err)
	}
}
