package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/internal/redistest"
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
		{"queue monitor API", bot.addr + "/admin/queues/api/queues", bearer, http.StatusOK, `"queue":"interactive"`},
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
