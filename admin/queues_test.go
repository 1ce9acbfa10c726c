package admin

import (
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/jobs"
)

// enqueueBoth puts one task on each of the bot's queues.
func enqueueBoth(t *testing.T, f *fixture) {
	t.Helper()
	c := asynq.NewClientFromRedisClient(f.rdb)
	for _, q := range []string{jobs.QueueAgent, jobs.QueueInteractive} {
		if _, err := c.Enqueue(asynq.NewTask("test:"+q, nil), asynq.Queue(q), asynq.TaskID("t-"+q)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestQueueMonitor checks asynqmon against asynq v0.26 data: it lists both
// queues, and, read-only, refuses to change them.
func TestQueueMonitor(t *testing.T) {
	f := newFixture(t)
	enqueueBoth(t, f)
	ts := f.serve(t, testToken)

	code, _, body := fetch(t, "GET", ts.URL+"/admin/queues/api/queues", bearer(testToken), nil)
	if code != http.StatusOK {
		t.Fatalf("GET /admin/queues/api/queues = %d, want 200:\n%s", code, body)
	}
	var resp struct {
		Queues []struct {
			Queue   string `json:"queue"`
			Pending int    `json:"pending"`
		} `json:"queues"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	var got []string
	for _, q := range resp.Queues {
		got = append(got, q.Queue)
		if q.Pending != 1 {
			t.Errorf("queue %s pending = %d, want 1", q.Queue, q.Pending)
		}
	}
	sort.Strings(got)
	if diff := cmp.Diff([]string{jobs.QueueAgent, jobs.QueueInteractive}, got); diff != "" {
		t.Errorf("queues (-want +got):\n%s", diff)
	}

	tests := []struct{ method, path string }{
		{"DELETE", "/admin/queues/api/queues/" + jobs.QueueAgent + "/pending_tasks/t-agent"},
		{"DELETE", "/admin/queues/api/queues/" + jobs.QueueAgent + "/pending_tasks:delete_all"},
		{"POST", "/admin/queues/api/queues/" + jobs.QueueInteractive + ":pause"},
		{"POST", "/admin/queues/api/queues/" + jobs.QueueAgent + "/pending_tasks/t-agent:archive"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			code, _, body := fetch(t, tt.method, ts.URL+tt.path, bearer(testToken), nil)
			if code != http.StatusMethodNotAllowed || !strings.Contains(body, "read-only") {
				t.Errorf("%s %s = %d, want 405 read-only:\n%s", tt.method, tt.path, code, body)
			}
		})
	}
	insp := asynq.NewInspectorFromRedisClient(f.rdb)
	for _, q := range []string{jobs.QueueAgent, jobs.QueueInteractive} {
		info, err := insp.GetQueueInfo(q)
		if err != nil || info.Pending != 1 || info.Paused {
			t.Errorf("queue %s after the refused changes: %+v, %v; want 1 pending, not paused", q, info, err)
		}
	}

	t.Run("the page itself", func(t *testing.T) {
		code, h, body := fetch(t, "GET", ts.URL+"/admin/queues", bearer(testToken), nil)
		if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(body, "/admin/queues") {
			t.Errorf("GET /admin/queues = %d %s, want asynqmon's page rooted at /admin/queues", code, h.Get("Content-Type"))
		}
	})
}

// TestQueueMonitorNav checks that every page of the queue monitor's
// single-page app carries the admin navigation bar right after <body>,
// with the admin pages' headers, while its scripts, files and API pass
// through unchanged.
func TestQueueMonitorNav(t *testing.T) {
	f := newFixture(t)
	enqueueBoth(t, f)
	ts := f.serve(t, testToken)
	p, err := newPages()
	if err != nil {
		t.Fatal(err)
	}
	nav := string(p.queueNav)
	for _, path := range []string{"/admin/queues", "/admin/queues/", "/admin/queues/queues/" + jobs.QueueAgent + "?status=pending", "/admin/queues/servers"} {
		t.Run(path, func(t *testing.T) {
			code, h, body := fetch(t, "GET", ts.URL+path, bearer(testToken), nil)
			if code != http.StatusOK {
				t.Fatalf("GET %s = %d, want 200", path, code)
			}
			if !strings.Contains(body, "<body>"+nav+"<noscript>") || strings.Count(body, `id="agentfix-nav"`) != 1 {
				t.Errorf("GET %s lacks the navigation bar after <body>:\n%s", path, body)
			}
			for k, want := range map[string]string{"Content-Type": "text/html; charset=utf-8", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
				if got := h.Get(k); got != want {
					t.Errorf("GET %s: %s = %q, want %q", path, k, got, want)
				}
			}
		})
	}
	t.Run("the bar", func(t *testing.T) {
		for _, want := range []string{`href="/admin/runs"`, `href="/admin/tasks"`, `href="/admin/queues" aria-current="page"`, `action="/admin/logout"`} {
			if !strings.Contains(nav, want) {
				t.Errorf("the bar lacks %s:\n%s", want, nav)
			}
		}
	})

	code, _, index := fetch(t, "GET", ts.URL+"/admin/queues", bearer(testToken), nil)
	if code != http.StatusOK {
		t.Fatal(code)
	}
	m := regexp.MustCompile(`src="(/admin/queues/static/js/main\.[0-9a-f]+\.chunk\.js)"`).FindStringSubmatch(index)
	if m == nil {
		t.Fatalf("asynqmon's page names no main script:\n%s", index)
	}
	untouched := []struct{ path, ctype string }{
		{m[1], "application/javascript; charset=utf-8"},
		{"/admin/queues/favicon.ico", ""},
		{"/admin/queues/api/queues", ""},
	}
	for _, u := range untouched {
		t.Run(u.path, func(t *testing.T) {
			code, h, body := fetch(t, "GET", ts.URL+u.path, bearer(testToken), nil)
			if code != http.StatusOK || strings.Contains(body, "agentfix-nav") || h.Get("X-Frame-Options") != "" {
				t.Errorf("GET %s = %d, X-Frame-Options %q, nav %v; want 200, untouched", u.path, code, h.Get("X-Frame-Options"), strings.Contains(body, "agentfix-nav"))
			}
			if u.ctype != "" && !strings.HasPrefix(h.Get("Content-Type"), u.ctype) {
				t.Errorf("GET %s: Content-Type %q, want %q", u.path, h.Get("Content-Type"), u.ctype)
			}
		})
	}
}
