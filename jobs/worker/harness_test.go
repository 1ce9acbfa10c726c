package worker

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/llm"
	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/ghapp/ghfake"
	"github.com/agentfix/agentfix/internal/redistest"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/runs"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/webhook"
	"github.com/agentfix/agentfix/workspace"
)

// The test world: one repository with a bug, installed for the App.
const (
	hRepo      = "octo/widget"
	hInstall   = 42
	hSecret    = "webhook-secret"
	hModel     = "openai/gpt-test"
	hRepoModel = "openai/gpt-repo" // a model a repository may choose
	hRequester = "alice"
	hUserID    = 1001
)

var hFiles = map[string]string{
	"calc.go":                  "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
	"README.md":                "# widget\n",
	".github/workflows/ci.yml": "on: push\n",
}

// syncBuffer collects log output from many goroutines.
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

// waits records the waits ghapp asked for between attempts; it does not
// sleep, so rate-limit tests run at once.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return ctx.Err()
}

// harness is one process's worth of the bot against fakes: real Redis,
// the fake GitHub with its git server, the real webhook edge, a fake
// OpenAI-compatible endpoint driven by a script, real bwrap sandboxes.
// It carries the end-to-end scenarios, from signed deliveries through
// ghapp's HTTP calls and git over HTTP: TestLabelToPullRequest,
// TestLabelReviewRoundStopHelp, TestCIRoundFixesFailingCheck,
// TestGoRepositoryInItsImage and TestProofOfAGoRegressionTest. Every other
// test of the package uses a smaller world (pipeworld_test.go,
// stepfakes_test.go).
type harness struct {
	t       *testing.T
	f       *ghfake.Fake
	rdb     redis.UniversalClient
	app     *ghapp.App
	cfg     *config.App
	data    string
	model   *fakeModel
	logs    *syncBuffer
	waits   *waits
	edge    http.Handler
	cache   *workspace.Cache
	store   *runs.Store
	issue   int
	markers string // where a hook run on the worker would leave a file

	mu      sync.Mutex
	jobDirs []string
}

func newHarness(t *testing.T, script ...turn) *harness {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	f := ghfake.New(t)
	f.NewRepo(hRepo, hFiles)
	f.Install(hInstall, hRepo)
	f.SetPermission(hRepo, hRequester, "write")
	h := &harness{t: t, f: f, rdb: rdb, logs: &syncBuffer{}, waits: &waits{}, data: filepath.Join(t.TempDir(), "data"), markers: t.TempDir()}
	h.issue = f.AddIssue(hRepo, ghfake.Issue{Title: "Add subtracts", Body: "calc.Add(2, 2) returns 0, want 4.", Author: "carol"})
	var err error
	h.app, err = ghapp.New(ghapp.Options{AppID: f.AppID(), PrivateKey: f.PrivateKeyPEM(), APIURL: f.APIURL(),
		Logger: h.logger(), Sleep: h.waits.sleep, Retry: ghapp.RetryOptions{MaxAttempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.AppID, cfg.WebhookSecret, cfg.DataDir, cfg.Model = f.AppID(), hSecret, h.data, hModel
	cfg.GitHubAPIURL = f.APIURL()
	cfg.MaxSteps, cfg.MaxCostUSD, cfg.MaxDuration = 20, 1, 5*time.Minute
	cfg.AgentConcurrency, cfg.InteractiveConcurrency = 1, 2
	h.cfg = cfg
	if h.cache, err = workspace.NewCache(workspace.CacheOptions{Dir: filepath.Join(h.data, "repos"), Logger: h.logger(), Sleep: h.waits.sleep}); err != nil {
		t.Fatal(err)
	}
	if h.store, err = runs.New(runs.Options{Dir: filepath.Join(h.data, "runs"), Redis: rdb, Retention: cfg.RunRetention}); err != nil {
		t.Fatal(err)
	}
	h.model = newFakeModel(t, script...)
	edge, err := webhook.New(webhook.Options{Config: cfg, Redis: rdb, Queue: jobs.NewClient(rdb, cfg.MaxDuration),
		Registry: prometheus.NewRegistry(), Logger: h.logger()})
	if err != nil {
		t.Fatal(err)
	}
	h.edge = edge.Handler()
	return h
}

func (h *harness) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// options returns the worker options of the harness; edit adjusts them.
func (h *harness) options(reg *prometheus.Registry, edit ...func(*Options)) Options {
	b, err := budget.New(h.rdb, budget.LimitsFrom(h.cfg), budget.Options{Registerer: reg})
	if err != nil {
		h.t.Fatal(err)
	}
	o := Options{
		Config: h.cfg, Redis: h.rdb, GitHub: FromApp(h.app), Cache: h.cache, Runs: h.store,
		Sandbox: h.sandbox, Model: h.newModel, Registry: reg, Logger: h.logger(),
		Budget: b, ModelPrice: h.modelPrice,
		ShutdownTimeout: 300 * time.Millisecond, GitHubTimeout: time.Minute,
		RetryDelay: func(int, error) time.Duration { return 100 * time.Millisecond },
		Poll:       20 * time.Millisecond,
		// asynq looks for new and due tasks this often: short, so tests
		// wait for work, not for the poll.
		TaskCheckInterval: 20 * time.Millisecond, DelayedTaskCheckInterval: 50 * time.Millisecond,
	}
	for _, e := range edit {
		e(&o)
	}
	return o
}

// startWorker runs a worker until the test ends or stop is called.
func (h *harness) startWorker(edit ...func(*Options)) (reg *prometheus.Registry, stop func()) {
	h.t.Helper()
	reg = prometheus.NewRegistry()
	w, err := New(h.options(reg, edit...))
	if err != nil {
		h.t.Fatal(err)
	}
	return reg, runWorker(h.t, w)
}

// runWorker runs w as a deployment does (w.Run: the interactive and the
// agent queue) until the test ends or stop is called; stop returns once
// Run has.
func runWorker(t *testing.T, w *Worker) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("worker Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// sandbox is the SandboxFactory: a real bwrap sandbox; it records the job
// directories so tests can look into them while a job runs.
func (h *harness) sandbox(o workspace.Options) (tools.Sandbox, error) {
	h.mu.Lock()
	h.jobDirs = append(h.jobDirs, filepath.Dir(o.Workspace))
	h.mu.Unlock()
	return workspace.NewBwrap(o)
}

// newModel is the ModelFactory: the real OpenAI provider against the fake
// endpoint.
func (h *harness) newModel(name string) (agent.Model, error) {
	return llm.New(name, llm.Options{
		APIKey: "sk-test", BaseURL: h.model.srv.URL + "/v1",
		Prices:     map[string]llm.Price{hModel: {Input: 1, Output: 2}, hRepoModel: {Input: 3, Output: 6}},
		MaxRetries: -1, Getenv: func(string) string { return "" }, Logger: h.logger(),
	})
}

// modelPrice is the ModelPrice of the harness's models, from the price
// their provider bills them at.
func (h *harness) modelPrice(m agent.Model) ModelPrice {
	p := m.(*llm.Model).Price()
	return ModelPrice{InputPerM: max(p.Input, p.CacheWrite), OutputPerM: p.Output, MaxOutputTokens: 4096}
}

// payload loads a webhook payload from testdata and points it at the
// harness: repository, installation, issue, sender.
func (h *harness) payload(name string, sender string) map[string]any {
	h.t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "webhooks", name))
	if err != nil {
		h.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		h.t.Fatal(err)
	}
	repo := m["repository"].(map[string]any)
	repo["full_name"], repo["name"], repo["clone_url"], repo["default_branch"] = hRepo, "widget", h.f.CloneURL(hRepo), "main"
	repo["owner"].(map[string]any)["login"] = "octo"
	m["installation"] = map[string]any{"id": hInstall}
	issue := m["issue"].(map[string]any)
	issue["number"], issue["state"] = h.issue, "open"
	issue["html_url"] = fmt.Sprintf("%s/octo/widget/issues/%d", h.f.URL(), h.issue)
	s := m["sender"].(map[string]any)
	s["login"], s["id"], s["type"] = sender, hUserID, "User"
	return m
}

// deliver signs and posts a delivery to the real webhook router and
// returns its delivery id.
func (h *harness) deliver(event string, payload map[string]any) string {
	h.t.Helper()
	body, err := json.Marshal(payload)
	if err != nil {
		h.t.Fatal(err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := "d-" + hex.EncodeToString(b[:])
	mac := hmac.New(sha256.New, []byte(hSecret))
	mac.Write(body)
	req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	rec := httptest.NewRecorder()
	h.edge.ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"queued"`) {
		h.t.Fatalf("delivery %s %s = %d %s, want 202 queued", event, id, rec.Code, rec.Body.String())
	}
	return id
}

// label delivers issues.labeled with the trigger label by sender.
func (h *harness) label(sender string) string {
	p := h.payload("issues.labeled.json", sender)
	p["label"].(map[string]any)["name"] = "agent-fix"
	return h.deliver("issues", p)
}

// comment adds a comment by sender on the issue and delivers its
// issue_comment.created.
func (h *harness) comment(sender, body string) string {
	return h.commentOn(h.issue, "", sender, body)
}

// commentOn adds a comment by sender on issue or pull request number
// (prAuthor is set for a pull request) and delivers it.
func (h *harness) commentOn(number int, prAuthor, sender, body string) string {
	id := h.f.AddComment(hRepo, number, sender, body)
	p := h.payload("issue_comment.created.json", sender)
	issue := p["issue"].(map[string]any)
	issue["number"] = number
	if prAuthor != "" {
		issue["pull_request"] = map[string]any{"url": fmt.Sprintf("%s/repos/%s/pulls/%d", h.f.APIURL(), hRepo, number)}
		issue["user"].(map[string]any)["login"] = prAuthor
		issue["user"].(map[string]any)["type"] = "User"
		if strings.HasSuffix(prAuthor, "[bot]") {
			issue["user"].(map[string]any)["type"] = "Bot"
		}
	}
	c := p["comment"].(map[string]any)
	c["id"], c["body"] = id, body
	c["user"].(map[string]any)["login"] = sender
	c["user"].(map[string]any)["type"] = "User"
	return h.deliver("issue_comment", p)
}

// waitFor polls cond until it holds. It has no timeout of its own: on a
// loaded machine a job takes what it takes. It fails the test, saying what
// it waited for, a little before go test's own deadline would end it.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline, ok := h.t.Deadline()
	deadline = deadline.Add(-30 * time.Second)
	for !cond() {
		if ok && time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s\nlogs:\n%s", what, tail(h.logs.String(), 6000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitForComments waits until the bot has want comments on n containing s
// and returns them. More than want fails the test at once, naming them: a
// wait for an exact count that was overshot would never end.
func (h *harness) waitForComments(what string, n int, s string, want int) []ghfake.Comment {
	h.t.Helper()
	var got []ghfake.Comment
	h.waitFor(what, func() bool {
		got = h.commentsWith(n, s)
		if len(got) > want {
			h.t.Fatalf("%s: %d comments with %q, want %d:\n%+v\nlogs:\n%s", what, len(got), s, want, got, tail(h.logs.String(), 6000))
		}
		return len(got) == want
	})
	return got
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

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// prs returns the pull requests of the repository.
func (h *harness) prs() []ghfake.PR { return h.f.PRs(hRepo) }

// botComments returns the bot's comments on n.
func (h *harness) botComments(n int) []ghfake.Comment {
	var out []ghfake.Comment
	for _, c := range h.f.Comments(hRepo, n) {
		if c.Author == h.f.BotLogin() {
			out = append(out, c)
		}
	}
	return out
}

// commentWith returns the bot's comments on n containing s.
func (h *harness) commentsWith(n int, s string) []ghfake.Comment {
	var out []ghfake.Comment
	for _, c := range h.botComments(n) {
		if strings.Contains(c.Body, s) {
			out = append(out, c)
		}
	}
	return out
}

// taskState returns the state of the agent task of the issue ("" when
// there is none).
func (h *harness) taskState() string {
	info, err := asynq.NewInspectorFromRedisClient(h.rdb).GetTaskInfo(jobs.QueueAgent, jobs.FixTaskID(hRepo, h.issue))
	if err != nil {
		return ""
	}
	return info.State.String()
}

// secrets returns every installation token the fake issued.
func (h *harness) secrets() []string { return h.f.IssuedTokens() }

// scanForTokens fails the test when an issued token is in any file under
// dir, byte for byte.
func (h *harness) scanForTokens(dir string) int {
	h.t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		files++
		b, err := os.ReadFile(p)
		if err != nil {
			return nil // a file the sandbox made unreadable
		}
		for _, tok := range h.secrets() {
			if bytes.Contains(b, []byte(tok)) {
				h.t.Errorf("an installation token is in %s", p)
			}
		}
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return files
}

// runningJobDirs returns the job directories of sandboxes made so far.
func (h *harness) runningJobDirs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.jobDirs...)
}

// ---- the fake OpenAI-compatible endpoint ----

// call is one tool call a scripted reply makes.
type call struct {
	name string
	args any
}

// turn is one scripted model reply.
type turn struct {
	calls []call
	// before runs when the request arrives, before the answer.
	before func()
	// block, when set, holds the answer until it is closed or the client
	// gives up (the job was cancelled).
	block chan struct{}
}

// fakeModel serves /v1/chat/completions from a script of turns and
// records the requests.
type fakeModel struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	turns    []turn
	requests []map[string]any
}

func newFakeModel(t *testing.T, script ...turn) *fakeModel {
	m := &fakeModel{t: t, turns: script}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

// add appends turns to the script.
func (m *fakeModel) add(script ...turn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turns = append(m.turns, script...)
}

// calls returns how many queries the model got.
func (m *fakeModel) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

// requestModel is the model the n-th query (from 0) asked for.
func (m *fakeModel) requestModel(n int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n >= len(m.requests) {
		return ""
	}
	name, _ := m.requests[n]["model"].(string)
	return name
}

func (m *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var body map[string]any
	raw, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(raw, &body)
	m.mu.Lock()
	m.requests = append(m.requests, body)
	n := len(m.requests)
	var tr turn
	ok := len(m.turns) > 0
	if ok {
		tr, m.turns = m.turns[0], m.turns[1:]
	}
	m.mu.Unlock()
	if !ok {
		m.t.Errorf("fake model: query %d has no scripted reply", n)
		http.Error(w, `{"error":{"message":"no scripted reply"}}`, http.StatusBadRequest)
		return
	}
	if tr.before != nil {
		tr.before()
	}
	if tr.block != nil {
		select {
		case <-tr.block:
		case <-r.Context().Done():
			return
		}
	}
	var toolCalls []map[string]any
	for i, c := range tr.calls {
		args, _ := json.Marshal(c.args)
		toolCalls = append(toolCalls, map[string]any{
			"id": fmt.Sprintf("call_%d_%d", n, i), "type": "function",
			"function": map[string]any{"name": c.name, "arguments": string(args)},
		})
	}
	resp := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1700000000, "model": "gpt-test",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls",
			"message": map[string]any{"role": "assistant", "content": "", "tool_calls": toolCalls}}},
		"usage": map[string]any{"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// Script pieces.

func bash(cmd string) turn { return turn{calls: []call{{"bash", map[string]string{"command": cmd}}}} }

func fixCalc() turn {
	return turn{calls: []call{{"str_replace_editor", map[string]string{
		"command": "str_replace", "path": "calc.go", "old_str": "return a - b", "new_str": "return a + b"}}}}
}

func submit(summary string) turn {
	args := map[string]string{}
	if summary != "" {
		args["summary"] = summary
	}
	return turn{calls: []call{{"submit", args}}}
}

// plantHooks is an agent's attempt to run code on the worker through the
// working copy's .git: hooks of every kind and core.fsmonitor, each leaving
// a file in dir (a host path) if it ever ran outside the sandbox.
func plantHooks(dir string) turn {
	var b strings.Builder
	b.WriteString("set -e; mkdir -p .git/hooks; ")
	for _, hook := range []string{"pre-commit", "post-commit", "commit-msg", "pre-push", "reference-transaction", "post-checkout", "post-index-change", "fsmonitor-watchman"} {
		fmt.Fprintf(&b, "printf '#!/bin/sh\\ntouch %s/%s\\n' > .git/hooks/%s; chmod +x .git/hooks/%s; ", dir, hook, hook, hook)
	}
	fmt.Fprintf(&b, "git config core.fsmonitor 'touch %s/fsmonitor'; git config core.hooksPath .git/hooks; ", dir)
	fmt.Fprintf(&b, "git config diff.external 'touch %s/diff-external'; echo planted", dir)
	return bash(b.String())
}

// fixScript is a whole successful run: look around (printing the
// environment and the working copy's git config), plant hooks, fix the
// bug, submit, pass the review, submit.
func fixScript(markers string) []turn {
	return []turn{
		bash("env; echo ---; cat .git/config"),
		plantHooks(markers),
		fixCalc(),
		submit("Fixed Add: it subtracted. Thanks @octocat! This also fixes #99.\n<img src=x onerror=alert(1)>"),
		submit(""),
	}
}
