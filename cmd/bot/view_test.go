package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/agenttest"
	"github.com/agentfix/agentfix/agent/llm"
	"github.com/agentfix/agentfix/localfix"
)

const viewRunID = "20260102T030405Z-0123abcd"

// viewRunDir writes a run directory as bot fix leaves it, from a real
// agent run (a scripted model, a fake environment), under root as
// agentfix-runs/viewRunID.
func viewRunDir(t *testing.T, root string) string {
	t.Helper()
	dir := filepath.Join(root, "agentfix-runs", viewRunID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const patch = "diff --git a/calc.go b/calc.go\n--- a/calc.go\n+++ b/calc.go\n@@ -1 +1 @@\n-return a - b\n+return a + b\n"
	var env *agenttest.Env
	env = agenttest.New(map[string]agenttest.Command{
		"go test ./...": {Do: func(context.Context) (agent.Observation, error) {
			return agent.Observation{Output: "FAIL\n[exit code 1]", Exit: &agent.Exit{Code: 1}}, nil
		}},
		"sed -i s/-/+/ calc.go": {Do: func(context.Context) (agent.Observation, error) {
			env.SetPatch(patch)
			return agent.Observation{Output: "[exit code 0]", Exit: &agent.Exit{Code: 0}}, nil
		}},
	})
	reply := func(text string, calls ...agent.ToolCall) llm.Turn {
		return llm.Turn{Reply: agent.Reply{
			Message:      agent.Message{Role: agent.RoleAssistant, Content: text, ToolCalls: calls},
			FinishReason: agent.FinishToolCalls, Usage: agent.Usage{InputTokens: 1000, OutputTokens: 20}, CostUSD: 0.002,
		}}
	}
	model := llm.NewScripted("demo", false,
		reply("Run the tests.", agenttest.Bash("c1", "go test ./...")),
		reply("Fix the sign.", agenttest.Bash("c2", "sed -i s/-/+/ calc.go")),
		reply("Review.", agenttest.Submit("c3", "")),
		reply("Done.", agenttest.Submit("c4", "Add adds.")),
	)
	var traj bytes.Buffer
	a, err := agent.New(model, env, agent.WithTrajectory(&traj), agent.WithRunID(viewRunID))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), agent.Task{Repo: "calc", Title: "Add subtracts", Body: "calc.Add(1, 2) is -1."})
	if err != nil || res.Status != agent.Submitted {
		t.Fatalf("agent run: %v, %s (%s); want submitted", err, res.Status, res.Reason)
	}
	for name, body := range map[string]string{localfix.TrajectoryFile: traj.String(), localfix.PatchFile: res.Patch} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// viewing is bot view started in the background.
type viewing struct {
	addr           string
	stdout, stderr *syncBuffer
	stop           func() error
}

// startView runs `bot view args...` in the working directory wd and waits
// until it listens.
func startView(t *testing.T, wd string, args ...string) *viewing {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	listening := make(chan string, 1)
	v := &viewing{stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	m := &Main{Args: append([]string{"view"}, args...), WorkDir: wd, Stdout: v.stdout, Stderr: v.stderr,
		Listening: func(addr string) { listening <- addr }}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	stopped := false
	var runErr error
	v.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			runErr = <-done
		}
		return runErr
	}
	t.Cleanup(func() { _ = v.stop() })
	select {
	case v.addr = <-listening:
		return v
	case err := <-done:
		done <- err
		t.Fatalf("bot view %v ended before listening: %v\n%s", args, err, v.stderr.String())
	case <-nearDeadline(t):
		t.Fatalf("bot view %v did not listen before the test's deadline", args)
	}
	return nil
}

// viewGet fetches url and returns its status and body.
func viewGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// checkViewGolden compares got with testdata/name.golden (-update rewrites
// it).
func checkViewGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", path, diff)
	}
}

// TestView serves a run directory of bot fix, given relative to the
// working directory: it prints the address, the page there is the run's,
// and Ctrl-C ends it with no error.
func TestView(t *testing.T) {
	t.Parallel()
	wd := t.TempDir()
	dir := viewRunDir(t, wd)
	v := startView(t, wd, filepath.Join("agentfix-runs", viewRunID))
	host, port, err := net.SplitHostPort(v.addr)
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Errorf("listening on %q (%v), want a free port of 127.0.0.1", v.addr, err)
	}
	code, page := viewGet(t, "http://"+v.addr+"/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d, want 200:\n%s", code, page)
	}
	for _, want := range []string{
		`<span class="runid">` + viewRunID + `</span>`, `title="submitted">Submitted</span>`, "scripted/demo",
		`✗ exit 1`, `✓ exit 0`, "Add subtracts", "&#43;return a &#43; b", "read from <code>" + dir + "</code>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	if code, _ := viewGet(t, "http://"+v.addr+"/admin/runs"); code != http.StatusNotFound {
		t.Errorf("GET /admin/runs = %d, want 404 (bot view shows one run)", code)
	}
	if err := v.stop(); err != nil {
		t.Errorf("bot view after Ctrl-C = %v, want nil (exit code 0)", err)
	}
	out := strings.ReplaceAll(v.stdout.String(), wd, "WD")
	checkViewGolden(t, "view", strings.ReplaceAll(out, ":"+port+"/", ":PORT/"))
	if s := v.stderr.String(); s != "" {
		t.Errorf("bot view logged:\n%s", s)
	}
}

// TestViewListen serves on the address --listen gives, before or after
// DIR.
func TestViewListen(t *testing.T) {
	t.Parallel()
	wd := t.TempDir()
	dir := viewRunDir(t, wd)
	tests := []struct {
		name string
		args func(addr string) []string
	}{
		{"before DIR", func(addr string) []string { return []string{"--listen", addr, dir} }},
		{"after DIR", func(addr string) []string { return []string{dir, "-listen=" + addr} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := freeAddr(t)
			v := startView(t, wd, tt.args(addr)...)
			if v.addr != addr {
				t.Errorf("listening on %s, want --listen's %s", v.addr, addr)
			}
			if !strings.Contains(v.stdout.String(), "open  http://"+addr+"/\n") {
				t.Errorf("bot view printed %q, want the address to open, http://%s/", v.stdout.String(), addr)
			}
			if code, _ := viewGet(t, "http://"+addr+"/"); code != http.StatusOK {
				t.Errorf("GET / = %d, want 200", code)
			}
		})
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestViewErrors checks what bot view says, and its exit code, for a bad
// command line and for a directory it cannot show (testdata/view-errors.golden).
func TestViewErrors(t *testing.T) {
	t.Parallel()
	wd := t.TempDir()
	dir := viewRunDir(t, wd)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	bad := filepath.Join(wd, "bad")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, localfix.TrajectoryFile), []byte("{\"type\":\"header\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no DIR", nil, 2},
		{"two directories", []string{dir, dir}, 2},
		{"an unknown flag", []string{"--port", "8080", dir}, 2},
		{"a public address", []string{"--listen", "0.0.0.0:8080", dir}, 2},
		{"an address without a port", []string{"--listen", "127.0.0.1", dir}, 2},
		{"a missing directory", []string{"agentfix-runs/20260102T030405Z-ffffffff"}, 1},
		{"the parent of the run directories", []string{"agentfix-runs"}, 1},
		{"a malformed trajectory", []string{"bad"}, 1},
		{"a port in use", []string{"--listen", taken.Addr().String(), dir}, 1},
	}
	var got strings.Builder
	for _, tt := range tests {
		var stderr bytes.Buffer
		m := &Main{Args: append([]string{"view"}, tt.args...), WorkDir: wd, Stdout: io.Discard, Stderr: &stderr}
		err := m.Run(context.Background())
		if err == nil {
			t.Errorf("%s: bot view succeeded, want an error", tt.name)
			continue
		}
		if code := exitCode(err); code != tt.code {
			t.Errorf("%s: exit code %d, want %d (%v)", tt.name, code, tt.code, err)
		}
		got.WriteString("# " + tt.name + "\n" + stderr.String() + err.Error() + "\n\n")
	}
	out := strings.ReplaceAll(got.String(), wd, "WD")
	checkViewGolden(t, "view-errors", strings.ReplaceAll(out, taken.Addr().String(), "127.0.0.1:PORT"))
}

// TestViewHelp checks bot view -h (testdata/view-help.golden).
func TestViewHelp(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	m := &Main{Args: []string{"view", "-h"}, WorkDir: t.TempDir(), Stdout: io.Discard, Stderr: &stderr}
	err := m.Run(context.Background())
	if !errors.Is(err, flag.ErrHelp) || exitCode(err) != 0 {
		t.Errorf("bot view -h = %v, want flag.ErrHelp (exit code 0)", err)
	}
	checkViewGolden(t, "view-help", stderr.String())
}
