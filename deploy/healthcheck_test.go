package deploy_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestHealthcheckScript runs the image's health check, deploy/healthcheck.sh,
// with bash against real HTTP servers.
func TestHealthcheckScript(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/readyz" {
			http.Error(w, "redis unreachable", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	closed := closedPort(t)

	for _, tc := range []struct {
		name       string
		listenAddr string
		args       []string
		wantCode   int
		wantAsked  []string
		wantStderr string
	}{
		{"healthy", ":" + port, nil, 0, []string{"GET /healthz"}, ""},
		{"host in the listen address", "127.0.0.1:" + port, []string{"/healthz"}, 0, []string{"GET /healthz"}, ""},
		{"wildcard host", "0.0.0.0:" + port, nil, 0, []string{"GET /healthz"}, ""},
		{"not ready", ":" + port, []string{"/readyz"}, 1, []string{"GET /readyz"}, "/readyz answered: HTTP/1.0 503 Service Unavailable"},
		{"nothing listening", ":" + closed, nil, 1, nil, "cannot connect to 127.0.0.1:" + closed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			asked = nil
			mu.Unlock()
			code, stderr := runHealthcheck(t, tc.listenAddr, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tc.wantCode, stderr)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr, tc.wantStderr)
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tc.wantAsked, asked); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

// runHealthcheck runs healthcheck.sh with AGENTFIX_LISTEN_ADDR=listenAddr
// and returns its exit code and standard error.
func runHealthcheck(t *testing.T, listenAddr string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{"healthcheck.sh"}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "AGENTFIX_LISTEN_ADDR=" + listenAddr}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &exit) && ctx.Err() == nil:
		return exit.ExitCode(), stderr.String()
	default:
		t.Fatalf("run healthcheck.sh: %v (stderr %q)", err, stderr.String())
		return 0, ""
	}
}

// closedPort returns a loopback port that nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}
