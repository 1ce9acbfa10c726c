package ghapp_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/ghapp/ghfake"
)

const (
	installationID = 7
	widgetName     = "acme/widget"
	otherName      = "acme/other"
)

var widget = ghapp.Repo{Owner: "acme", Name: "widget"}

// sleeper records the waits the App asks for, without waiting.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return ctx.Err()
}

func (s *sleeper) recorded() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// syncBuffer is a log sink safe for concurrent writes.
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

// env is an App under test against a fake GitHub with two repositories in
// one installation.
type env struct {
	f      *ghfake.Fake
	app    *ghapp.App
	client *ghapp.Client
	sleep  *sleeper
	reg    *prometheus.Registry
	logs   *syncBuffer
	now    time.Time
}

// setup starts a fake and an App on it; edit adjusts the options.
func setup(t *testing.T, edit ...func(*ghapp.Options)) *env {
	t.Helper()
	f := ghfake.New(t)
	f.NewRepo(widgetName, map[string]string{
		"README.md":             "# widget\n",
		".github/agent-fix.yml": "test: go test ./...\n",
		"src/main.go":           "package main\n",
	})
	f.NewRepo(otherName, map[string]string{"README.md": "# other\n"})
	f.Install(installationID, widgetName, otherName)
	e := &env{f: f, sleep: &sleeper{}, reg: prometheus.NewRegistry(), logs: &syncBuffer{}, now: time.Now()}
	opts := ghapp.Options{
		AppID:      f.AppID(),
		PrivateKey: f.PrivateKeyPEM(),
		APIURL:     f.APIURL(),
		Logger:     slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Registerer: e.reg,
		Sleep:      e.sleep.sleep,
		Now:        func() time.Time { return e.now },
	}
	for _, ed := range edit {
		ed(&opts)
	}
	app, err := ghapp.New(opts)
	if err != nil {
		t.Fatalf("ghapp.New: %v", err)
	}
	e.app = app
	if e.client, err = app.Installation(installationID); err != nil {
		t.Fatalf("Installation(%d): %v", installationID, err)
	}
	t.Cleanup(func() { e.checkNoTokenLeak(t) })
	return e
}

// checkNoTokenLeak fails the test if an issued token appears in the logs.
func (e *env) checkNoTokenLeak(t *testing.T) {
	t.Helper()
	logs := e.logs.String()
	for _, tok := range e.f.IssuedTokens() {
		if bytes.Contains([]byte(logs), []byte(tok)) {
			t.Errorf("an installation token appears in the logs:\n%s", logs)
		}
	}
}

// countCalls counts the fake's requests.
func (e *env) countCalls(method, pattern string) int {
	return e.f.CountCalls(method, pattern)
}

// ghfakeIssue is an issue by alice titled title.
func ghfakeIssue(title string) ghfake.Issue {
	return ghfake.Issue{Title: title, Body: "It breaks.", Author: "alice"}
}
