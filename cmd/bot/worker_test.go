package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentfix/agentfix/ghapp/ghfake"
	"github.com/agentfix/agentfix/internal/redistest"
)

// botEnv returns the environment of a bot that talks to the fake GitHub,
// the fake OpenAI endpoint and Redis at redisURL ("" for none).
func botEnv(t *testing.T, f *ghfake.Fake, ai *fakeOpenAI, redisURL string) []string {
	t.Helper()
	key := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(key, f.PrivateKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append([]string{
		"AGENTFIX_APP_ID=" + jsonNumber(f.AppID()), "AGENTFIX_PRIVATE_KEY_FILE=" + key, "AGENTFIX_WEBHOOK_SECRET=s3cret",
		"AGENTFIX_GITHUB_API_URL=" + f.APIURL(), "AGENTFIX_DATA_DIR=" + filepath.Join(t.TempDir(), "data"),
		"AGENTFIX_MAX_STEPS=10",
	}, ai.environ()...)
	if redisURL != "" {
		env = append(env, "AGENTFIX_REDIS_URL="+redisURL)
	}
	return env
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestWorkerCommand(t *testing.T) {
	t.Parallel()
	f := ghfake.New(t)
	ai := newFakeOpenAI(t)
	srv := redistest.Start(t)
	bot := start(t, botEnv(t, f, ai, srv.URL()), "worker")
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, _ := get(t, bot.addr+path); code != http.StatusOK {
			t.Errorf("%s = %d, want 200", path, code)
		}
	}
	if code, body := get(t, bot.addr+"/metrics"); code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics = %d, want 200 with the process metrics", code)
	}
	if code, _ := get(t, bot.addr+"/webhook"); code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
		t.Errorf("GET /webhook on a worker = %d, want no webhook route", code)
	}
	if err := bot.stop(); err != nil {
		t.Errorf("Run after cancel = %v, want nil (graceful shutdown)", err)
	}
	if logs := bot.stderr.String(); !strings.Contains(logs, "worker started") {
		t.Errorf("logs lack the worker's start:\n%s", logs)
	}
}

func TestWorkerStartupErrors(t *testing.T) {
	t.Parallel()
	f := ghfake.New(t)
	ai := newFakeOpenAI(t)
	base := botEnv(t, f, ai, "redis://127.0.0.1:1/0")
	without := func(prefix string) []string {
		var out []string
		for _, kv := range base {
			if !strings.HasPrefix(kv, prefix) {
				out = append(out, kv)
			}
		}
		return out
	}
	tests := []struct {
		name    string
		environ []string
		want    string
	}{
		{"setup mode", []string{"AGENTFIX_REDIS_URL=redis://127.0.0.1:1/0"}, "AGENTFIX_APP_ID: required by `bot worker`"},
		{"no redis", without("AGENTFIX_REDIS_URL="), "AGENTFIX_REDIS_URL: required by this command"},
		{"no model", without("AGENTFIX_MODEL="), "AGENTFIX_MODEL: required by the worker"},
		{"unknown provider", slices.Concat(without("AGENTFIX_MODEL="), []string{"AGENTFIX_MODEL=acme/x"}), `model "acme/x": want provider/model`},
		{"docker sandbox without an image", slices.Concat(base, []string{"AGENTFIX_SANDBOX=docker"}), "AGENTFIX_SANDBOX_IMAGE: required when AGENTFIX_SANDBOX is docker"},
		{"none sandbox without opt-in", slices.Concat(base, []string{"AGENTFIX_SANDBOX=none"}), "AGENTFIX_ALLOW_UNSANDBOXED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Main{Args: []string{"worker"}, Environ: tt.environ, WorkDir: t.TempDir(), Stdout: io.Discard, Stderr: io.Discard}
			err := m.Run(context.Background())
			_ = m.Close()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run error = %v, want it to contain %q", err, tt.want)
			}
			if got := exitCode(err); got != 2 {
				t.Errorf("exit code = %d, want 2", got)
			}
		})
	}
}

// TestServeLabelToPullRequest runs `bot serve` — the edge and both workers
// in one process, on the in-process Redis — and turns a signed label
// delivery into one pull request on the fake GitHub.
func TestServeLabelToPullRequest(t *testing.T) {
	t.Parallel()
	f := ghfake.New(t)
	f.NewRepo("octo/widget", map[string]string{"calc.go": calcBuggy})
	f.Install(7, "octo/widget")
	f.SetPermission("octo/widget", "alice", "write")
	issue := f.AddIssue("octo/widget", ghfake.Issue{Title: "Add subtracts", Body: "2+2 is 0"})
	ai := newFakeOpenAI(t,
		fakeCall{status: http.StatusServiceUnavailable}, // retried by the provider, counted
		fakeCall{tool: "str_replace_editor", args: map[string]string{"command": "str_replace", "path": "calc.go", "old_str": "\treturn a - b", "new_str": "\treturn a + b"}},
		fakeCall{tool: "submit", args: map[string]string{"summary": "Add adds."}},
		fakeCall{tool: "submit", args: map[string]string{}},
	)
	bot := start(t, append(botEnv(t, f, ai, ""), "AGENTFIX_PUBLIC_URL=https://bot.example.com"), "serve")

	raw, err := os.ReadFile(filepath.Join("..", "..", "webhook", "testdata", "issues.labeled.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	repo := p["repository"].(map[string]any)
	repo["full_name"], repo["name"], repo["clone_url"] = "octo/widget", "widget", f.CloneURL("octo/widget")
	repo["owner"].(map[string]any)["login"] = "octo"
	p["installation"] = map[string]any{"id": 7}
	p["issue"].(map[string]any)["number"] = issue
	p["label"].(map[string]any)["name"] = "agent-fix"
	p["sender"].(map[string]any)["login"] = "alice"
	body, _ := json.Marshal(p)
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write(body)
	if code := deliver(t, bot.addr, "d-serve", body, "sha256="+hex.EncodeToString(mac.Sum(nil))); code != http.StatusAccepted {
		t.Fatalf("delivery = %d, want 202", code)
	}
	for len(f.PRs("octo/widget")) == 0 {
		if pastDeadline(t) {
			t.Fatalf("no pull request before the test's deadline\n%s", bot.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	pr := f.PRs("octo/widget")[0]
	if !strings.HasPrefix(pr.Body, "Fixes #1\n") || pr.Head != "agent-fix/issue-1" {
		t.Errorf("PR head %s body:\n%s", pr.Head, pr.Body)
	}
	// The signed link to the run's page (AGENTFIX_PUBLIC_URL is set) opens
	// it without the admin token.
	link := regexp.MustCompile(`\(https://bot\.example\.com(/runs/[^)]+)\)`).FindStringSubmatch(pr.Body)
	if link == nil {
		t.Fatalf("PR body lacks the signed run link:\n%s", pr.Body)
	}
	code, page := get(t, bot.addr+link[1])
	for (code != http.StatusOK || !strings.Contains(page, "Add adds.")) && !pastDeadline(t) {
		time.Sleep(100 * time.Millisecond)
		code, page = get(t, bot.addr+link[1])
	}
	if code != http.StatusOK || !strings.Contains(page, "Add adds.") {
		t.Errorf("GET %s = %d, want the run's page with the agent's summary", link[1], code)
	}
	// The run's model calls were charged to the budgets.
	_, metrics := get(t, bot.addr+"/metrics")
	if !regexp.MustCompile(`(?m)^agentfix_budget_spent_usd\{scope="job"\} 0\.\d*[1-9]`).MatchString(metrics) {
		t.Errorf("/metrics shows no job spend:\n%s", metrics)
	}
	if !strings.Contains(metrics, `agentfix_model_errors_total{provider="openai"} 1`+"\n") {
		t.Errorf("/metrics does not count the one failed model call:\n%s", metrics)
	}
	if got := f.Files("octo/widget", pr.Head)["calc.go"]; !bytes.Contains([]byte(got), []byte("return a + b")) {
		t.Errorf("calc.go on the branch:\n%s", got)
	}
	if err := bot.stop(); err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
}

// TestWorkerSweepsFailedDeliveries checks that `bot worker` runs the
// redelivery sweep: a delivery GitHub failed to make, followed by one that
// succeeded (so the outage is over), is redelivered once.
func TestWorkerSweepsFailedDeliveries(t *testing.T) {
	t.Parallel()
	f := ghfake.New(t)
	ai := newFakeOpenAI(t)
	srv := redistest.Start(t)
	now := time.Now()
	failed := f.AddDelivery(ghfake.Delivery{GUID: "guid-failed", Event: "issues", Action: "labeled",
		Status: "Invalid HTTP Response: 502", StatusCode: 502, DeliveredAt: now.Add(-2 * time.Minute)})
	f.AddDelivery(ghfake.Delivery{GUID: "guid-ok", Event: "issues", Action: "labeled",
		Status: "OK", StatusCode: 202, DeliveredAt: now.Add(-time.Minute)})
	bot := start(t, botEnv(t, f, ai, srv.URL()), "worker")
	for len(f.Redeliveries()) == 0 && !pastDeadline(t) {
		time.Sleep(50 * time.Millisecond)
	}
	if err := bot.stop(); err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
	if got, want := f.Redeliveries(), []int64{failed}; !slices.Equal(got, want) {
		t.Errorf("redelivered %v, want %v\nlogs:\n%s", got, want, bot.stderr.String())
	}
}
