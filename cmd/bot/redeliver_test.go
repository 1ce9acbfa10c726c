package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/ghapp/ghfake"
	"github.com/agentfix/agentfix/internal/redistest"
)

// redeliverEnv is a fake GitHub with failed deliveries, a real Redis, and
// the environment of a bot configured for both.
type redeliverEnv struct {
	f       *ghfake.Fake
	environ []string
}

func newRedeliverEnv(t *testing.T) *redeliverEnv {
	t.Helper()
	f := ghfake.New(t)
	key := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(key, f.PrivateKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	now := time.Now()
	for _, d := range []ghfake.Delivery{
		{GUID: "9c1e-old", Event: "issues", Action: "labeled", Status: "Invalid HTTP Response: 503", StatusCode: 503, DeliveredAt: now.Add(-7 * time.Hour)},
		{GUID: "3f2a-label", Event: "issues", Action: "labeled", Status: "Invalid HTTP Response: 503", StatusCode: 503, DeliveredAt: now.Add(-5 * time.Hour)},
		{GUID: "3f2a-label", Event: "issues", Action: "labeled", Status: "timed out", StatusCode: 0, DeliveredAt: now.Add(-4 * time.Hour), Redelivery: true},
		{GUID: "77b0-comment", Event: "issue_comment", Action: "created", Status: "OK", StatusCode: 202, DeliveredAt: now.Add(-3 * time.Hour)},
		{GUID: "a5d4-review", Event: "pull_request_review", Action: "submitted", Status: "Invalid HTTP Response: 502", StatusCode: 502, DeliveredAt: now.Add(-2 * time.Hour)},
		{GUID: "e810-comment", Event: "issue_comment", Action: "created", Status: "Invalid HTTP Response: 503", StatusCode: 503, DeliveredAt: now.Add(-time.Hour)},
	} {
		f.AddDelivery(d)
	}
	return &redeliverEnv{f: f, environ: []string{
		"AGENTFIX_APP_ID=4242", "AGENTFIX_PRIVATE_KEY_FILE=" + key, "AGENTFIX_WEBHOOK_SECRET=s",
		"AGENTFIX_GITHUB_API_URL=" + f.APIURL(), "AGENTFIX_REDIS_URL=" + srv.URL(), "AGENTFIX_LOG_FORMAT=text", "AGENTFIX_LOG_LEVEL=error",
	}}
}

// run runs `bot args...` and returns its output with times replaced.
func (e *redeliverEnv) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	m := &Main{Args: args, Environ: e.environ, WorkDir: t.TempDir(), Stdout: &out, Stderr: io.Discard}
	err := m.Run(context.Background())
	if cerr := m.Close(); cerr != nil {
		t.Errorf("Close: %v", cerr)
	}
	return regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`).ReplaceAllString(out.String(), "<time>"), err
}

func TestRedeliverCommand(t *testing.T) {
	t.Parallel()
	e := newRedeliverEnv(t)
	// GitHub refuses one redelivery (as for a delivery too old).
	e.f.FailNext("POST", "/app/hook/deliveries/*/attempts", 422, nil)

	dry, err := e.run(t, "redeliver", "--since", "6h", "--dry-run")
	if err != nil {
		t.Fatalf("--dry-run: %v", err)
	}
	if len(e.f.Redeliveries()) != 0 {
		t.Errorf("--dry-run redelivered %v", e.f.Redeliveries())
	}
	out, err := e.run(t, "redeliver", "--since", "6h")
	if err != nil {
		t.Fatalf("redeliver: %v", err)
	}
	again, err := e.run(t, "redeliver", "--since", "6h")
	if err != nil {
		t.Fatalf("redeliver again: %v", err)
	}
	golden := filepath.Join("testdata", "redeliver.golden")
	got := "$ bot redeliver --since 6h --dry-run\n" + dry + "\n$ bot redeliver --since 6h\n" + out + "\n$ bot redeliver --since 6h   # again\n" + again
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
		t.Errorf("output differs from %s (-want +got):\n%s", golden, diff)
	}
	// a5d4-review and e810-comment; GitHub refused 3f2a-label.
	if n := len(e.f.Redeliveries()); n != 2 {
		t.Errorf("redeliveries = %v, want 2", e.f.Redeliveries())
	}
}

func TestRedeliverCommandErrors(t *testing.T) {
	t.Parallel()
	e := newRedeliverEnv(t)
	tests := []struct {
		name    string
		args    []string
		environ []string
		want    string
	}{
		{"zero since", []string{"redeliver", "--since", "0s"}, e.environ, "--since must be within (0, 72h0m0s], got 0s"},
		{"since beyond github's window", []string{"redeliver", "--since", "96h"}, e.environ, "--since must be within (0, 72h0m0s], got 96h0m0s"},
		{"not a duration", []string{"redeliver", "--since", "3d"}, e.environ, `invalid value "3d" for flag -since`},
		{"setup mode", []string{"redeliver"}, []string{"AGENTFIX_REDIS_URL=redis://127.0.0.1:1/0"}, "AGENTFIX_APP_ID: required by `bot redeliver`"},
		{"no redis", []string{"redeliver"}, e.environ[:4], "AGENTFIX_REDIS_URL: required by this command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Main{Args: tt.args, Environ: tt.environ, WorkDir: t.TempDir(), Stdout: io.Discard, Stderr: io.Discard}
			err := m.Run(context.Background())
			_ = m.Close()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %v, want %q", err, tt.want)
			}
			if got := exitCode(err); got != 2 {
				t.Errorf("exit code = %d, want 2", got)
			}
		})
	}
	if n := len(e.f.Redeliveries()); n != 0 {
		t.Errorf("redeliveries = %d, want none", n)
	}
}
