package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/ghapp/ghfake"
	"github.com/agentfix/agentfix/internal/redistest"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/runs"
)

const adminToken = "admin-token-0123456789"

func getWith(t *testing.T, url string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
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

// TestWebhookAdminAndQueueMetrics runs `bot webhook` against a real Redis:
// /metrics carries asynq's queue metrics for both queues, /admin needs the
// token, and a signed link shows a run recorded by another process.
func TestWebhookAdminAndQueueMetrics(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const secret = "s3cret"
	environ := []string{"AGENTFIX_APP_ID=42", "AGENTFIX_PRIVATE_KEY_FILE=" + appKey(t), "AGENTFIX_WEBHOOK_SECRET=" + secret, "AGENTFIX_REDIS_URL=" + srv.URL()}
	bot := start(t, append(environ, "AGENTFIX_ADMIN_TOKEN="+adminToken), "webhook")

	// A trigger leaves a notice on the interactive queue and a fix on
	// the agent queue.
	body, sig := labeled(t, secret)
	if code := deliver(t, bot.addr, "d-1", body, sig); code != http.StatusAccepted {
		t.Fatalf("delivery = %d, want 202", code)
	}
	_, metrics := get(t, bot.addr+"/metrics")
	for _, want := range []string{
		`asynq_queue_size{queue="agent"} 1`,
		`asynq_queue_size{queue="interactive"} 1`,
		`asynq_queue_latency_seconds{queue="agent"}`,
		`asynq_queue_paused_total{queue="interactive"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// A run recorded by a worker (another store on the same Redis).
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	store, err := runs.New(runs.Options{Dir: filepath.Join(t.TempDir(), "runs"), Redis: rdb, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	run, err := store.Create(context.Background(), runs.Meta{Kind: "fix", Repo: "codertocat/hello-world", Number: 1, Requester: "octocat"})
	if err != nil {
		t.Fatal(err)
	}
	run.Close()
	link, err := runs.SignLink(runs.LinkKey(secret), bot.addr, run.ID(), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}

	bearer := http.Header{"Authorization": {"Bearer " + adminToken}}
	tests := []struct {
		name   string
		url    string
		header http.Header
		code   int
		want   string
	}{
		{"runs without the token", bot.addr + "/admin/runs", nil, http.StatusUnauthorized, "Admin token"},
		{"runs with the token", bot.addr + "/admin/runs", bearer, http.StatusOK, "codertocat/hello-world"},
		{"run page", bot.addr + "/admin/runs/" + run.ID(), bearer, http.StatusOK, "octocat"},
		{"queues page", bot.addr + "/admin/queues", bearer, http.StatusOK, `<code>interactive</code>`},
		{"signed link", link, nil, http.StatusOK, "codertocat/hello-world"},
		{"unsigned link", bot.addr + "/runs/" + run.ID(), nil, http.StatusForbidden, "Invalid link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := getWith(t, tt.url, tt.header)
			if code != tt.code || !strings.Contains(body, tt.want) {
				t.Errorf("GET %s = %d, want %d with %q:\n%.600s", tt.url, code, tt.code, tt.want, body)
			}
		})
	}

	t.Run("no admin token", func(t *testing.T) {
		plain := start(t, environ, "webhook")
		if code, _ := getWith(t, plain.addr+"/admin/runs", bearer); code != http.StatusNotFound {
			t.Errorf("/admin/runs without AGENTFIX_ADMIN_TOKEN = %d, want 404", code)
		}
		if code, _ := getWith(t, strings.Replace(link, bot.addr, plain.addr, 1), nil); code != http.StatusOK {
			t.Errorf("signed link without AGENTFIX_ADMIN_TOKEN = %d, want 200", code)
		}
	})
}

// TestServeRunInAdmin runs `bot serve` from a label to a pull request and
// then reads that run in the admin views: the run the worker recorded is
// listed, and its page shows the editor call, the review and the diff.
func TestServeRunInAdmin(t *testing.T) {
	t.Parallel()
	f := ghfake.New(t)
	f.NewRepo("octo/widget", map[string]string{"calc.go": calcBuggy})
	f.Install(7, "octo/widget")
	f.SetPermission("octo/widget", "alice", "write")
	issue := f.AddIssue("octo/widget", ghfake.Issue{Title: "Add subtracts", Body: "2+2 is 0"})
	ai := newFakeOpenAI(t,
		fakeCall{tool: "str_replace_editor", args: map[string]string{"command": "str_replace", "path": "calc.go", "old_str": "\treturn a - b", "new_str": "\treturn a + b"}},
		fakeCall{tool: "submit", args: map[string]string{"summary": "Add adds."}},
		fakeCall{tool: "submit", args: map[string]string{}},
	)
	bot := start(t, append(botEnv(t, f, ai, ""), "AGENTFIX_ADMIN_TOKEN="+adminToken), "serve")
	body, sig := labeledIssue(t, "s3cret", "octo/widget", f.CloneURL("octo/widget"), issue, "alice")
	if code := deliver(t, bot.addr, "d-admin", body, sig); code != http.StatusAccepted {
		t.Fatalf("delivery = %d, want 202", code)
	}
	bearer := http.Header{"Authorization": {"Bearer " + adminToken}}
	var list string
	for !strings.Contains(list, `title="pr_opened">Pull request opened</span>`) {
		if pastDeadline(t) {
			t.Fatalf("no finished run in /admin/runs before the test's deadline:\n%s\n%s", list, bot.stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
		_, list = getWith(t, bot.addr+"/admin/runs", bearer)
	}
	m := regexp.MustCompile(`href="/admin/runs/([0-9TZ]+-[0-9a-f]+)"`).FindStringSubmatch(list)
	if m == nil || !strings.Contains(list, "octo/widget") {
		t.Fatalf("/admin/runs lists no run of octo/widget:\n%s", list)
	}
	code, page := getWith(t, bot.addr+"/admin/runs/"+m[1], bearer)
	if code != http.StatusOK {
		t.Fatalf("run page = %d, want 200", code)
	}
	for _, want := range []string{
		"Add subtracts",
		`<b>str_replace</b> <code>calc.go</code>`,
		`id="review-phase"`,
		`Review message`,
		`<span class="add">&#43;	return a &#43; b</span>`,
		`<span class="del">-	return a - b</span>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
}

// TestWorkerServesAdmin checks that `bot worker`'s listener has the admin
// views too.
func TestWorkerServesAdmin(t *testing.T) {
	t.Parallel()
	f := ghfake.New(t)
	srv := redistest.Start(t)
	bot := start(t, append(botEnv(t, f, newFakeOpenAI(t), srv.URL()), "AGENTFIX_ADMIN_TOKEN="+adminToken), "worker")
	if code, _ := getWith(t, bot.addr+"/admin/runs", nil); code != http.StatusUnauthorized {
		t.Errorf("/admin/runs without the token = %d, want 401", code)
	}
	if code, body := getWith(t, bot.addr+"/admin/runs", http.Header{"Authorization": {"Bearer " + adminToken}}); code != http.StatusOK || !strings.Contains(body, "No runs") {
		t.Errorf("/admin/runs = %d, want 200 with no runs:\n%s", code, body)
	}
}

// labeledIssue is a signed issues.labeled delivery with the trigger label
// for issue number of repo, sent by sender.
func labeledIssue(t *testing.T, secret, repo, cloneURL string, number int, sender string) ([]byte, string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "webhook", "testdata", "issues.labeled.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	owner, name, _ := strings.Cut(repo, "/")
	r := p["repository"].(map[string]any)
	r["full_name"], r["name"], r["clone_url"] = repo, name, cloneURL
	r["owner"].(map[string]any)["login"] = owner
	p["installation"] = map[string]any{"id": 7}
	p["issue"].(map[string]any)["number"] = number
	p["label"].(map[string]any)["name"] = "agent-fix"
	p["sender"].(map[string]any)["login"] = sender
	body, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return body, "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// TestQueueMetricsReadRedisOnlyOnScrape registers the queue collector
// against a Redis that accepts connections and never answers: registering
// must not connect, so an unreachable Redis cannot hold up startup.
func TestQueueMetricsReadRedisOnlyOnScrape(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			defer c.Close()
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second})
	defer rdb.Close()
	if err := jobs.RegisterQueueMetrics(newRegistry(), rdb); err != nil {
		t.Fatalf("RegisterQueueMetrics: %v", err)
	}
	// A connection made while registering waited for its reply, so it was
	// accepted and counted by the time the accept loop ends.
	ln.Close()
	<-done
	if n := accepted.Load(); n != 0 {
		t.Errorf("registering connected to Redis %d times, want 0 (only a scrape reads Redis)", n)
	}
}
