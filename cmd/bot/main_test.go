package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/internal/redistest"
	"github.com/agentfix/agentfix/jobs"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// syncBuffer is a bytes.Buffer safe for the logger and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// running is a Main started in the background.
type running struct {
	addr   string
	stderr *syncBuffer
	stop   func() error
}

// start runs `bot args...` with environ in a fresh working directory and
// waits until it listens. stop cancels it and returns Run's error.
func start(t *testing.T, environ []string, args ...string) *running {
	t.Helper()
	return startIn(t, t.TempDir(), environ, args...)
}

// startIn is start in the working directory dir.
func startIn(t *testing.T, dir string, environ []string, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	listening := make(chan string, 1)
	stderr := &syncBuffer{}
	m := &Main{
		Args: args, WorkDir: dir, Stdout: io.Discard, Stderr: stderr,
		Environ:   append([]string{"AGENTFIX_LISTEN_ADDR=127.0.0.1:0", "AGENTFIX_LOG_FORMAT=text"}, environ...),
		Listening: func(addr string) { listening <- addr },
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
			if err := m.Close(); runErr == nil {
				runErr = err
			}
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	select {
	case addr := <-listening:
		return &running{addr: "http://" + addr, stderr: stderr, stop: stop}
	case err := <-done:
		done <- err // for stop in the cleanup
		t.Fatalf("bot %v ended before listening: %v\n%s", args, err, stderr.String())
	case <-nearDeadline(t):
		t.Fatalf("bot %v did not listen before the test's deadline\n%s", args, stderr.String())
	}
	return nil
}

// nearDeadline fires a little before go test's deadline would end the
// test, so a wait can say what it waited for; never without a deadline.
func nearDeadline(t *testing.T) <-chan time.Time {
	d, ok := t.Deadline()
	if !ok {
		return nil
	}
	return time.After(time.Until(d) - 30*time.Second)
}

// pastDeadline reports whether the test is near go test's deadline.
func pastDeadline(t *testing.T) bool {
	d, ok := t.Deadline()
	return ok && time.Until(d) < 30*time.Second
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeSetupMode(t *testing.T) {
	t.Parallel()
	bot := start(t, nil, "serve")
	tests := []struct {
		method, path string
		code         int
	}{
		{"GET", "/healthz", 200},
		{"GET", "/readyz", 200},
		{"GET", "/setup", 200},
		{"GET", "/metrics", 200},
		{"POST", "/webhook", 404},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, bot.addr+tt.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.code {
			t.Errorf("%s %s = %d, want %d", tt.method, tt.path, resp.StatusCode, tt.code)
		}
	}
	if err := bot.stop(); err != nil {
		t.Errorf("Run after cancel = %v, want nil (graceful shutdown)", err)
	}
	logs := bot.stderr.String()
	for _, want := range []string{"setup mode: no GitHub App is configured", "in-process Redis; it is not durable"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
}

// appKey writes a fresh App private key and returns its path.
func appKey(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "app.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStartupErrors(t *testing.T) {
	t.Parallel()
	key := appKey(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	defer refusing.Close()
	tests := []struct {
		name    string
		args    []string
		environ []string
		want    string
		code    int
	}{
		{"no command", nil, nil, "usage: bot <command> [flags]", 2},
		{"unknown command", []string{"deploy"}, nil, `unknown command "deploy"`, 2},
		{"unknown flag", []string{"serve", "--port", "1"}, nil, "flag provided but not defined: -port", 2},
		{"id without key", []string{"serve"}, []string{"AGENTFIX_APP_ID=1", "AGENTFIX_WEBHOOK_SECRET=s"}, "AGENTFIX_PRIVATE_KEY: required when AGENTFIX_APP_ID is set (or set AGENTFIX_PRIVATE_KEY_FILE)", 2},
		{"key without id", []string{"serve"}, []string{"AGENTFIX_PRIVATE_KEY_FILE=" + key, "AGENTFIX_WEBHOOK_SECRET=s"}, "AGENTFIX_APP_ID: required when a private key is configured (the App's id is on its settings page)", 2},
		{"app without secret", []string{"serve"}, []string{"AGENTFIX_APP_ID=1", "AGENTFIX_PRIVATE_KEY_FILE=" + key}, "AGENTFIX_WEBHOOK_SECRET: required when the GitHub App is configured (/webhook is never served without it)", 2},
		{"webhook without redis", []string{"webhook"}, []string{"AGENTFIX_APP_ID=1", "AGENTFIX_PRIVATE_KEY_FILE=" + key, "AGENTFIX_WEBHOOK_SECRET=s"}, "AGENTFIX_REDIS_URL: required by this command (only `bot serve` embeds an in-process Redis)", 2},
		{"webhook in setup mode", []string{"webhook"}, []string{"AGENTFIX_REDIS_URL=redis://127.0.0.1:1/0"}, "AGENTFIX_APP_ID: required by `bot webhook` (setup mode is served by `bot serve`)", 2},
		{"bad redis url", []string{"webhook"}, []string{"AGENTFIX_APP_ID=1", "AGENTFIX_PRIVATE_KEY_FILE=" + key, "AGENTFIX_WEBHOOK_SECRET=s", "AGENTFIX_REDIS_URL=memcached://x"}, `AGENTFIX_REDIS_URL: must be a URL such as redis://localhost:6379/0 (the scheme redis, rediss or redis-sentinel), got "memcached://x"`, 2},
		{"missing config file", []string{"serve", "--config", "missing.yml"}, nil, "missing.yml: cannot read the configuration file: no such file or directory", 2},
		{"listen address taken", []string{"serve"}, []string{"AGENTFIX_LISTEN_ADDR=" + taken.Addr().String()}, "listen on " + taken.Addr().String() + " (AGENTFIX_LISTEN_ADDR)", 1},
		{"model key refused", []string{"worker"}, []string{"AGENTFIX_APP_ID=1", "AGENTFIX_PRIVATE_KEY_FILE=" + key, "AGENTFIX_WEBHOOK_SECRET=s",
			"AGENTFIX_REDIS_URL=redis://127.0.0.1:1/0", "AGENTFIX_MODEL=openai/gpt-5", "OPENAI_API_KEY=sk-wrong", "OPENAI_BASE_URL=" + refusing.URL + "/v1"},
			"OPENAI_API_KEY: openai refused the key in OPENAI_API_KEY: 401 Unauthorized from " + refusing.URL + "/v1", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Main{Args: tt.args, Environ: tt.environ, WorkDir: t.TempDir(), Stdout: io.Discard, Stderr: io.Discard}
			err := m.Run(context.Background())
			_ = m.Close()
			if err == nil {
				t.Fatalf("Run succeeded, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run error = %q, want it to contain %q", err, tt.want)
			}
			if strings.HasPrefix(tt.want, "AGENTFIX_") && strings.Contains(err.Error(), "\n") {
				t.Errorf("Run error has several lines, want one naming the variable:\n%v", err)
			}
			if got := exitCode(err); got != tt.code {
				t.Errorf("exit code = %d, want %d", got, tt.code)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	m := &Main{Args: []string{"version"}, Stdout: &out, Stderr: io.Discard}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasPrefix(got, "bot ") || !strings.Contains(got, " go1.") {
		t.Errorf("version output = %q, want \"bot <version> ... go1.x\"", got)
	}
}

// labeled is a signed issues.labeled delivery with the trigger label.
func labeled(t *testing.T, secret string) ([]byte, string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "webhook", "testdata", "issues.labeled.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["label"].(map[string]any)["name"] = "agent-fix"
	b, _ := json.Marshal(m)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(b)
	return b, "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func deliver(t *testing.T, url, id string, body []byte, sig string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestWebhookEnqueuesOnePerTrigger runs `bot webhook` against a real Redis:
// a label delivery, sent twice, leaves exactly one fix task.
func TestWebhookEnqueuesOnePerTrigger(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const secret = "s3cret"
	bot := start(t, []string{"AGENTFIX_APP_ID=42", "AGENTFIX_PRIVATE_KEY_FILE=" + appKey(t), "AGENTFIX_WEBHOOK_SECRET=" + secret, "AGENTFIX_REDIS_URL=" + srv.URL()}, "webhook")
	body, sig := labeled(t, secret)
	for range 2 {
		if code := deliver(t, bot.addr, "d-1", body, sig); code != http.StatusAccepted {
			t.Errorf("delivery = %d, want 202", code)
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	infos, err := asynq.NewInspectorFromRedisClient(rdb).ListPendingTasks(jobs.QueueAgent)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].ID != "fix:codertocat/hello-world#1" {
		t.Errorf("agent tasks = %v, want one fix:codertocat/hello-world#1", infos)
	}
	if code, _ := get(t, bot.addr+"/readyz"); code != 200 {
		t.Errorf("/readyz = %d, want 200", code)
	}
}

// TestServeEmbeddedRedis runs `bot serve` with an App but no Redis URL: the
// in-process Redis takes the tasks.
func TestServeEmbeddedRedis(t *testing.T) {
	t.Parallel()
	const secret = "s3cret"
	bot := start(t, []string{"AGENTFIX_APP_ID=42", "AGENTFIX_PRIVATE_KEY_FILE=" + appKey(t), "AGENTFIX_WEBHOOK_SECRET=" + secret,
		"AGENTFIX_MODEL=openai/gpt-5", "OPENAI_API_KEY=test-key", "AGENTFIX_DATA_DIR=" + t.TempDir()}, "serve")
	body, sig := labeled(t, secret)
	if code := deliver(t, bot.addr, "d-1", body, sig); code != http.StatusAccepted {
		t.Errorf("delivery = %d, want 202", code)
	}
	_, metrics := get(t, bot.addr+"/metrics")
	if !strings.Contains(metrics, `agentfix_webhook_deliveries_total{event="issues",outcome="queued"} 1`) {
		t.Errorf("/metrics does not count the queued delivery")
	}
	if err := bot.stop(); err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
}

// TestVersionStamped checks the version a release build stamps with
// -ldflags "-X main.version=… -X main.revision=…" (the Dockerfile does).
func TestVersionStamped(t *testing.T) {
	t.Parallel()
	defer func(v, r string) { version, revision = v, r }(version, revision)
	version, revision = "v1.2.3", "0123456789abcdef0123"
	got := versionString()
	if want := "bot v1.2.3 (0123456789ab) go1."; !strings.HasPrefix(got, want) {
		t.Errorf("versionString() = %q, want prefix %q", got, want)
	}
}
