package admin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

// TestQueuesPage reads real asynq v0.26 data: a worker running one task
// of the agent queue, a pending and an archived task, the interactive
// queue never used, and a queue of another program sharing Redis. The
// page only reads: other methods are refused and change nothing.
func TestQueuesPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := asynq.NewClientFromRedisClient(f.rdb)
	enqueue := func(typ, id, queue string) {
		t.Helper()
		if _, err := c.Enqueue(asynq.NewTask(typ, nil), asynq.Queue(queue), asynq.TaskID(id)); err != nil {
			t.Fatal(err)
		}
	}
	enqueue("test:hold", "t-hold", jobs.QueueAgent)
	enqueue("test:other", "t-other", "other-app")
	started, release := make(chan struct{}), make(chan struct{})
	mux := asynq.NewServeMux()
	mux.HandleFunc("test:hold", func(context.Context, *asynq.Task) error {
		close(started)
		<-release
		return nil
	})
	srv := asynq.NewServerFromRedisClient(f.rdb, asynq.Config{Queues: map[string]int{jobs.QueueAgent: 3, jobs.QueueInteractive: 1},
		Concurrency: 1, LogLevel: asynq.FatalLevel, TaskCheckInterval: 50 * time.Millisecond})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	t.Cleanup(func() { close(release) })
	<-started
	// With the one worker busy, the next task waits, pending.
	enqueue("test:wait", "t-wait", jobs.QueueAgent)
	enqueue("test:dead", "t-dead", jobs.QueueAgent)
	insp := asynq.NewInspectorFromRedisClient(f.rdb)
	if err := insp.ArchiveTask(jobs.QueueAgent, "t-dead"); err != nil {
		t.Fatal(err)
	}

	s := f.server(t, testToken)
	// The worker writes what it runs to Redis on its own heartbeat.
	var v queuesView
	for {
		v = s.readQueues(httptest.NewRequest("GET", "/admin/queues", nil))
		if len(v.Workers) == 1 && len(v.Workers[0].Active) == 1 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	type row struct {
		Name                                      string
		Missing                                   bool
		Active, Pending, Archived, ProcessedToday int
	}
	var got []row
	for _, q := range v.Queues {
		if q.Error != "" {
			t.Errorf("queue %s: %s", q.Name, q.Error)
		}
		got = append(got, row{q.Name, q.Missing, q.Active, q.Pending, q.Archived, q.ProcessedToday})
	}
	want := []row{
		{Name: jobs.QueueAgent, Active: 1, Pending: 1, Archived: 1},
		{Name: jobs.QueueInteractive, Missing: true},
		{Name: "other-app", Pending: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("queues (-want +got):\n%s", diff)
	}
	w := v.Workers[0]
	if diff := cmp.Diff([]string{"agent 3", "interactive 1"}, w.Queues); diff != "" || w.Concurrency != 1 || w.Active[0] != "test:hold t-hold" {
		t.Errorf("worker %+v; want queues agent 3, interactive 1 (%s), concurrency 1, running test:hold t-hold", w, diff)
	}
	if v.Reload != listRefresh || v.History.Error != "" || len(v.History.Days) != historyDays ||
		!cmp.Equal(v.History.Queues, []string{jobs.QueueAgent, "other-app"}) {
		t.Errorf("reload %d, history %+v; want %d, %d days of agent and other-app", v.Reload, v.History, listRefresh, historyDays)
	}

	ts := f.serve(t, testToken)
	code, _, body := fetch(t, "GET", ts.URL+"/admin/queues", bearer(testToken), nil)
	for _, want := range []string{`<tr class="queue" id="queue-agent">`, `href="/admin/tasks#queue-agent"`, "No task was ever enqueued on it.",
		"<code>other-app</code>", "<code>test:hold t-hold</code>", `<meta http-equiv="refresh" content="10">`} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET /admin/queues = %d, lacks %s:\n%s", code, want, body)
		}
	}
	for _, method := range []string{"POST", "DELETE", "PUT"} {
		if code, _, _ := fetch(t, method, ts.URL+"/admin/queues", bearer(testToken), nil); code != http.StatusMethodNotAllowed {
			t.Errorf("%s /admin/queues = %d, want 405", method, code)
		}
	}
	if info, err := insp.GetQueueInfo(jobs.QueueAgent); err != nil || info.Pending != 1 || info.Archived != 1 || info.Paused {
		t.Errorf("the agent queue after the refused requests: %+v, %v; want 1 pending, 1 archived, not paused", info, err)
	}
}

// TestQueuesPageGolden compares the queues page of fixed data with
// testdata/queues*.golden: every form of a row (read, paused, never used,
// unreadable), the history, and the workers; then a Redis that answers
// nothing.
func TestQueuesPageGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.server(t, testToken)
	started := time.Date(2025, 1, 2, 14, 0, 0, 0, time.UTC)
	full := queuesView{
		Queues: []queueStats{
			{Name: jobs.QueueAgent, TasksURL: "/admin/tasks#queue-agent", Active: 2, Pending: 5, Scheduled: 1, Retry: 1, Archived: 3, Completed: 40,
				Waited: 12*time.Minute + 30*time.Second, ProcessedToday: 12, FailedToday: 1, ProcessedTotal: 1234, FailedTotal: 56},
			{Name: jobs.QueueInteractive, TasksURL: "/admin/tasks#queue-interactive", Paused: true, Pending: 1, Waited: 5 * time.Second},
			{Name: "other-app", TasksURL: "/admin/tasks#queue-other-app", Missing: true},
			{Name: "<b>odd</b>", TasksURL: "/admin/tasks#queue-<b>odd</b>", Error: "This queue could not be read from Redis; try again shortly."},
		},
		History: history([]string{jobs.QueueAgent, jobs.QueueInteractive}, map[string][]*asynq.DailyStats{
			jobs.QueueAgent:       {{Processed: 12, Failed: 1}, {Processed: 30}},
			jobs.QueueInteractive: {{Processed: 4}},
		}, 3),
		Workers: []workerRow{{Host: "worker-1", PID: 42, Status: "active", Started: started, Concurrency: 2,
			Queues: []string{"agent 3", "interactive 1"}, Active: []string{"fix fix:octo/hello#7", "revise revise:octo/other#3"}}},
		Reload: listRefresh,
	}
	empty := queuesView{
		Queues:       []queueStats{{Name: jobs.QueueAgent, TasksURL: "/admin/tasks#queue-agent", Missing: true}},
		History:      history(nil, nil, historyDays),
		WorkersError: "The workers could not be read from Redis; try again shortly.",
	}
	for name, v := range map[string]queuesView{"queues": full, "queues-empty": empty} {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			r := httptest.NewRequest("GET", "/admin/queues", nil)
			r.Header.Set("Authorization", "Bearer "+testToken)
			s.renderPage(rec, r, http.StatusOK, "queues", page{Title: "Queues", Nav: "queues", Refresh: v.Reload, Data: v})
			checkGolden(t, name, rec.Body.String())
		})
	}
}

func TestQueueOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		own, found []string
		want       []string
	}{
		{"none found", []string{"agent", "interactive"}, nil, []string{"agent", "interactive"}},
		{"own first, as configured", []string{"agent", "interactive"}, []string{"interactive", "agent"}, []string{"agent", "interactive"}},
		{"others after, by name", []string{"agent"}, []string{"zeta", "agent", "alpha"}, []string{"agent", "alpha", "zeta"}},
	}
	for _, tt := range tests {
		if got := queueOrder(tt.own, tt.found); !cmp.Equal(tt.want, got) {
			t.Errorf("%s: queueOrder(%q, %q) = %q, want %q", tt.name, tt.own, tt.found, got, tt.want)
		}
	}
}

func TestHistory(t *testing.T) {
	t.Parallel()
	got := history([]string{"a", "b"}, map[string][]*asynq.DailyStats{
		"a": {{Processed: 3, Failed: 1}, nil, {Processed: 7}},
		"b": {{Processed: 2}},
	}, 4)
	want := historyView{Span: 4, Queues: []string{"a", "b"}, Days: []dayRow{
		{"today", []dayCell{{3, 1}, {2, 0}}},
		{"yesterday", []dayCell{{0, 0}, {0, 0}}},
		{"2 days ago", []dayCell{{7, 0}, {0, 0}}},
		{"3 days ago", []dayCell{{0, 0}, {0, 0}}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if got := history(nil, nil, 7); len(got.Days) != 0 {
		t.Errorf("history of no queue = %+v, want no days", got)
	}
}

func TestWorkerRows(t *testing.T) {
	t.Parallel()
	t1 := time.Date(2025, 1, 2, 14, 0, 0, 0, time.UTC)
	got := workerRows([]*asynq.ServerInfo{
		{Host: "b", PID: 2, Started: t1, Queues: map[string]int{"interactive": 1, "agent": 3, "ci": 3},
			ActiveWorkers: []*asynq.WorkerInfo{{TaskType: "fix", TaskID: "z"}, {TaskType: "checks", TaskID: "a"}}},
		{Host: "a", PID: 9, Started: t1},
		{Host: "c", PID: 1, Started: t1.Add(-time.Hour)},
	})
	type row struct {
		Host           string
		Queues, Active []string
	}
	var rows []row
	for _, r := range got {
		rows = append(rows, row{r.Host, r.Queues, r.Active})
	}
	want := []row{
		{Host: "c"},
		{Host: "a"},
		{"b", []string{"agent 3", "ci 3", "interactive 1"}, []string{"checks a", "fix z"}},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("workers (-want +got):\n%s", diff)
	}
}

func TestWaited(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0:                              "–",
		5 * time.Second:                "under a minute",
		time.Minute + 59*time.Second:   "1 min",
		72*time.Minute + 5*time.Second: "1 h 12 min",
	} {
		if got := waited(d); got != want {
			t.Errorf("waited(%v) = %q, want %q", d, got, want)
		}
	}
}
