package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentfix/agentfix/ghapp/ghfake"
)

// dockerOnPath puts a docker CLI stand-in first on PATH (so the test
// cannot run in parallel) that answers as a daemon that is down (daemon
// "down") or up, with the sandbox image on the machine (image "present"),
// pullable ("pullable") or neither. It records each call, one a line, in
// the returned file.
func dockerOnPath(t *testing.T, daemon, image string) (calls string) {
	t.Helper()
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	script := `#!/bin/sh
echo "$*" >> ` + calls + `
if [ ` + daemon + ` = down ]; then
  echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2
  exit 1
fi
case "$1 ` + image + `" in
  "version "*) echo 27.1.1 ;;
  "image present") echo sha256:0123 ;;
  "image "*) echo 'Error: No such image: '"$6" >&2; exit 1 ;;
  "pull pullable") echo sha256:0123 ;;
  "pull "*) echo 'Error response from daemon: manifest for '"$4"' not found: manifest unknown' >&2; exit 1 ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return calls
}

// refusingOpenAI is a model provider that refuses every key, so a command
// that gets past the sandbox's check stops at the model's.
func refusingOpenAI(t *testing.T) (environ []string, baseURL string, requests func() int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	t.Cleanup(srv.Close)
	return []string{"OPENAI_API_KEY=wrong-key", "OPENAI_BASE_URL=" + srv.URL + "/v1", "AGENTFIX_MODEL=openai/gpt-5"}, srv.URL,
		func() int64 { srv.Close(); return n.Load() }
}

// TestDockerCheckedBeforeTheModel: with the docker sandbox, bot fix and the
// worker ask the Docker daemon and the image before any call to the model
// provider, and stop on a daemon that does not answer or an image that
// cannot be pulled with the messages of testdata/docker_check.golden; an
// image that is pulled first is said.
func TestDockerCheckedBeforeTheModel(t *testing.T) {
	const image = "ghcr.io/example/toolchain:1"
	repo := newCalcRepo(t, nil)
	issue := issueFile(t)
	var b strings.Builder
	for _, tt := range []struct {
		name, daemon, image string
		command             string // "fix", "fix --image" or "worker"
		wantModelCalls      bool
	}{
		{"bot fix, daemon down", "down", "present", "fix --image", false},
		{"bot fix, image not pullable", "up", "missing", "fix", false},
		{"bot fix, image pulled", "up", "pullable", "fix --image", true},
		{"worker, daemon down", "down", "present", "worker", false},
		{"worker, image not pullable", "up", "missing", "worker", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := dockerOnPath(t, tt.daemon, tt.image)
			ai, baseURL, modelCalls := refusingOpenAI(t)
			var stdout, stderr strings.Builder
			m := &Main{WorkDir: t.TempDir(), Stdout: &stdout, Stderr: &stderr,
				Environ: slices.Concat([]string{"AGENTFIX_SANDBOX=docker", "HOME=" + t.TempDir()}, testGitEnv, ai)}
			switch tt.command {
			case "worker":
				env := botEnv(t, ghfake.New(t), newFakeOpenAI(t), "redis://127.0.0.1:1/0")
				m.Environ = slices.Concat(env, ai, []string{"AGENTFIX_SANDBOX=docker", "AGENTFIX_SANDBOX_IMAGE=" + image, "AGENTFIX_LISTEN_ADDR=127.0.0.1:0"})
				m.Args = []string{"worker"}
			case "fix":
				m.Environ = append(m.Environ, "AGENTFIX_SANDBOX_IMAGE="+image)
				m.Args = []string{"fix", "--repo", repo, "--issue-file", issue}
			default:
				m.Args = []string{"fix", "--repo", repo, "--issue-file", issue, "--image", image}
			}
			err := m.Run(context.Background())
			_ = m.Close()
			t.Logf("bot %s → %v\nstdout:\n%s\nstderr:\n%s", strings.Join(m.Args, " "), err, stdout.String(), stderr.String())
			if code := exitCode(err); code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			if n := modelCalls(); (n > 0) != tt.wantModelCalls {
				t.Errorf("the model provider got %d requests, want some: %v", n, tt.wantModelCalls)
			}
			raw, _ := os.ReadFile(calls)
			if !strings.HasPrefix(string(raw), "version ") {
				t.Errorf("docker calls:\n%s\nwant docker version first", raw)
			}
			fmt.Fprintf(&b, "## %s\n%s%v\n\n", tt.name, stdout.String(), strings.ReplaceAll(fmt.Sprint(err), baseURL, "$OPENAI_URL"))
		})
	}
	checkGolden(t, "docker_check.golden", b.String())
}
