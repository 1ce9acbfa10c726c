package admin

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/agenttest"
	"github.com/agentfix/agentfix/agent/llm"
	"github.com/agentfix/agentfix/internal/redistest"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/runs"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

const (
	testToken  = "admin-token-0123456789"
	testSecret = "webhook secret"
	testRunID  = "20250102T150405Z-1a2b3c4d"
	// runningRunID and failedRunID are two more runs, with no
	// trajectory: one still running in another repository, one that
	// failed an hour before the scripted run.
	runningRunID = "20250102T153000Z-5e6f7a8b"
	failedRunID  = "20250102T140405Z-9c0d1e2f"
	// The deliveries of the runs.
	testDelivery    = "d-7"
	runningDelivery = "d-3"
	// xss is injected into the issue text, the model's text and a
	// command's output; it must come out as text.
	xss = "<script>alert(1)</script>"
)

var t0 = time.Date(2025, 1, 2, 15, 4, 5, 0, time.UTC)

// testPatch is the change the scripted agent makes.
const testPatch = `diff --git a/greet.go b/greet.go
index 3b18e51..a042389 100644
--- a/greet.go
+++ b/greet.go
@@ -3,5 +3,5 @@ package main
 import "fmt"
 
 func main() {
-	fmt.Println("Helo")
+	fmt.Println("Hello")
 }
`

// stepClock is a clock that moves 1.5 seconds on every reading, so every
// duration in a trajectory is fixed.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(1500 * time.Millisecond)
	return c.now
}

// fixture is a real Redis with one run recorded through runs.Store from a
// real agent run (scripted model, fake Env).
type fixture struct {
	rdb   redis.UniversalClient
	store *runs.Store
	// runsDir is the store's directory: it holds a run directory per run.
	runsDir string
	// clock is the admin server's clock.
	clock func() time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	now := func() time.Time { return t0.Add(time.Hour) }
	dir := filepath.Join(t.TempDir(), "runs")
	store, err := runs.New(runs.Options{Dir: dir, Redis: rdb, Retention: 336 * time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{rdb: rdb, store: store, runsDir: dir, clock: now}
	f.recordRun(t)
	f.recordOthers(t)
	return f
}

// recordOthers records the running and the failed run as the worker
// would, without trajectories.
func (f *fixture) recordOthers(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	others := []struct {
		meta runs.Meta
		edit func(*runs.Meta)
	}{
		{runs.Meta{RunID: runningRunID, Kind: "revise", TaskID: "revise:octo/other#3", DeliveryID: runningDelivery,
			Repo: "octo/other", Number: 3, Requester: "hubot", Model: "openai/gpt-5", Started: t0.Add(25*time.Minute + 55*time.Second)},
			func(m *runs.Meta) { m.Steps, m.CostUSD = 2, 0.012 }},
		{runs.Meta{RunID: failedRunID, Kind: "fix", TaskID: "fix:octo/hello#5", DeliveryID: "d-5",
			Repo: "octo/hello", Number: 5, Requester: "mona", Model: "anthropic/claude-sonnet-4", Started: t0.Add(-time.Hour)},
			func(m *runs.Meta) {
				m.Status, m.ExitStatus, m.ExitReason = "failed", string(agent.LimitsExceeded), "the step limit of 30 was reached"
				m.Steps, m.CostUSD, m.Tokens = 30, 0.8125, runs.Tokens{Input: 250000, Output: 9000}
				m.Ended = m.Started.Add(45 * time.Minute)
				m.Duration = m.Ended.Sub(m.Started)
			}},
	}
	for _, o := range others {
		run, err := f.store.Create(ctx, o.meta)
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Update(o.edit); err != nil {
			t.Fatal(err)
		}
		if err := run.Save(ctx); err != nil {
			t.Fatal(err)
		}
		run.Close()
	}
}

// turn is a tool-mode model reply.
func turn(content string, usage agent.Usage, cost float64, calls ...agent.ToolCall) llm.Turn {
	return llm.Turn{Reply: agent.Reply{
		Message:      agent.Message{Role: agent.RoleAssistant, Content: content, ToolCalls: calls},
		FinishReason: agent.FinishToolCalls,
		Usage:        usage,
		CostUSD:      cost,
	}}
}

// recordRun runs the agent on a scripted conversation, writing the
// trajectory into a run record as the worker does, and saves the record.
func (f *fixture) recordRun(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	run, err := f.store.Create(ctx, runs.Meta{
		RunID: testRunID, Kind: "fix", TaskID: "fix:octo/hello#7", DeliveryID: testDelivery,
		Repo: "octo/hello", Number: 7, Requester: "mona", Model: "scripted/demo", Started: t0,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	// The commands end as the tools' bash records it: cat succeeds, grep
	// finds nothing (exit 1), sed edits the file.
	var env *agenttest.Env
	ran := func(out string, code int, patch string) agenttest.Command {
		return agenttest.Command{Do: func(context.Context) (agent.Observation, error) {
			if patch != "" {
				env.SetPatch(patch)
			}
			return agent.Observation{Output: out, Exit: &agent.Exit{Code: code}}, nil
		}}
	}
	env = agenttest.New(map[string]agenttest.Command{
		"cat greet.go":                  ran("package main\n\n// "+xss+"\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"Helo\")\n}\n", 0, ""),
		"grep -n Hello greet.go":        ran("[exit code 1]", 1, ""),
		"sed -i s/Helo/Hello/ greet.go": ran("", 0, testPatch),
	})
	u := func(in, out int64) agent.Usage { return agent.Usage{InputTokens: in, OutputTokens: out} }
	model := llm.NewScripted("demo", false,
		turn("I will read greet.go first.", u(1200, 40), 0.0042, agenttest.Bash("c1", "cat greet.go"), agenttest.Bash("c1b", "grep -n Hello greet.go")),
		turn("The file says "+xss+" in a comment; the greeting is misspelled.", u(1500, 30), 0.0051),
		turn("Fixing the spelling.", u(1600, 35), 0.0055, agenttest.Bash("c2", "sed -i s/Helo/Hello/ greet.go")),
		turn("Submitting for review.", u(1700, 20), 0.0058, agenttest.Submit("c3", "")),
		turn("The diff is minimal and right.", u(2100, 25), 0.0071, agenttest.Submit("c4", "Fix the greeting's spelling.")),
	)
	clock := &stepClock{now: t0}
	a, err := agent.New(model, env, agent.WithTrajectory(run.Trajectory()), agent.WithRunID(testRunID), agent.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(ctx, agent.Task{
		Repo: "octo/hello", Issue: 7, Title: "Greeting is misspelled",
		Body: "main prints Helo.\n\n" + xss,
	})
	if err != nil {
		t.Fatalf("agent run: %v", err)
	}
	if res.Status != agent.Submitted {
		t.Fatalf("agent run ended %s (%s), want submitted", res.Status, res.Reason)
	}
	if err := run.SetPatch(res.Patch); err != nil {
		t.Fatal(err)
	}
	err = run.Update(func(m *runs.Meta) {
		m.Status, m.ExitStatus = "pr_opened", string(res.Status)
		m.Steps, m.CostUSD = res.Steps, res.CostUSD
		m.Tokens = runs.Tokens{Input: res.Usage.InputTokens, Output: res.Usage.OutputTokens}
		m.PR, m.PRURL = 12, "https://github.com/octo/hello/pull/12"
		// The worker's end: after the agent, the push and the pull
		// request took 20 more seconds.
		m.Ended = res.Ended.Add(20 * time.Second)
		m.Duration = m.Ended.Sub(m.Started)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Save(ctx); err != nil {
		t.Fatal(err)
	}
}

// server returns an admin server over the fixture's runs and queues.
func (f *fixture) server(t *testing.T, token string) *Server {
	t.Helper()
	s, err := New(Options{
		Token: token, LinkKey: runs.LinkKey(testSecret), Runs: f.store, Redis: f.rdb, Queues: []string{jobs.QueueAgent, jobs.QueueInteractive},
		GitHubWebURL: "https://github.com/", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: f.clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serve starts the admin server's routes on an httptest server.
func (f *fixture) serve(t *testing.T, token string) *httptest.Server {
	t.Helper()
	r := chi.NewRouter()
	f.server(t, token).Routes(r)
	ts := httptest.NewServer(r)
	t.Cleanup(ts.Close)
	return ts
}

// signedPath returns the path and query of a signed link to the test run
// that expires at exp.
func signedPath(t *testing.T, key []byte, exp time.Time) string {
	t.Helper()
	link, err := runs.SignLink(key, "http://bot.invalid", testRunID, exp)
	if err != nil {
		t.Fatal(err)
	}
	return link[len("http://bot.invalid"):]
}

// fetch does one request and returns the status, the headers and the body.
func fetch(t *testing.T, method, url string, header http.Header, body io.Reader) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}
