package admin

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/runs"
)

// enqueueJobs puts tasks built by package jobs on the queues, as the edge
// does: the fix task of the scripted run's delivery, the revise task of
// the running run's, and the notice of a delivery that started no run.
func enqueueJobs(t *testing.T, f *fixture) {
	t.Helper()
	repo := func(name string) jobs.Repo {
		return jobs.Repo{ID: 1, Owner: "octo", Name: name, FullName: "octo/" + name}
	}
	fix, err := jobs.NewFixTask(jobs.FixIssue{DeliveryID: testDelivery, Installation: 9, Repo: repo("hello"), Number: 7,
		Requester: jobs.User{Login: "mona"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	revise, err := jobs.NewReviseTask(jobs.RevisePR{DeliveryID: runningDelivery, Installation: 9, Repo: repo("other"), Number: 3,
		Requester: jobs.User{Login: "hubot"}, Author: jobs.User{Login: "agentfix[bot]"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	notice, err := jobs.NewNoticeTask(jobs.Notice{DeliveryID: "d-9", Installation: 9, Repo: repo("hello"), Number: 9,
		Requester: jobs.User{Login: "mona"}, Outcome: jobs.OutcomeAlreadyWorking, AgentTaskID: jobs.FixTaskID("octo/hello", 9)})
	if err != nil {
		t.Fatal(err)
	}
	c := asynq.NewClientFromRedisClient(f.rdb)
	for _, task := range []*asynq.Task{fix, revise, notice} {
		if _, err := c.Enqueue(task); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTaskList runs the agent queue's tasks on a real asynq server, so the
// tasks page sees them active, completed and scheduled, each linked to the
// runs of its delivery: one run, two runs (a retry started another), none.
func TestTaskList(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// A second run of the failed run's delivery.
	retry, err := f.store.Create(ctx, runs.Meta{RunID: "20250102T142000Z-0a0b0c0d", Kind: "fix", TaskID: "fix:octo/hello#5",
		DeliveryID: "d-5", Repo: "octo/hello", Number: 5, Started: t0.Add(-44 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if err := retry.Save(ctx); err != nil {
		t.Fatal(err)
	}
	retry.Close()

	started, release := make(chan struct{}), make(chan struct{})
	mux := asynq.NewServeMux()
	mux.HandleFunc(jobs.TypeFix, func(context.Context, *asynq.Task) error { return nil })
	mux.HandleFunc(jobs.TypeRevise, func(context.Context, *asynq.Task) error {
		close(started)
		<-release
		return nil
	})
	srv := asynq.NewServerFromRedisClient(f.rdb, asynq.Config{Queues: map[string]int{jobs.QueueAgent: 1}, Concurrency: 2,
		LogLevel: asynq.FatalLevel, TaskCheckInterval: 50 * time.Millisecond})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	t.Cleanup(func() { close(release) })

	repo := func(name string) jobs.Repo {
		return jobs.Repo{ID: 1, Owner: "octo", Name: name, FullName: "octo/" + name}
	}
	fix, err := jobs.NewFixTask(jobs.FixIssue{DeliveryID: testDelivery, Installation: 9, Repo: repo("hello"), Number: 7}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	revise, err := jobs.NewReviseTask(jobs.RevisePR{DeliveryID: runningDelivery, Installation: 9, Repo: repo("other"), Number: 3}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	later, err := jobs.NewFixTask(jobs.FixIssue{DeliveryID: "d-5", Installation: 9, Repo: repo("hello"), Number: 5}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c := asynq.NewClientFromRedisClient(f.rdb)
	for _, e := range []struct {
		task *asynq.Task
		opts []asynq.Option
	}{{fix, nil}, {revise, nil}, {later, []asynq.Option{asynq.ProcessIn(time.Hour)}}} {
		if _, err := c.Enqueue(e.task, e.opts...); err != nil {
			t.Fatal(err)
		}
	}
	<-started
	insp := asynq.NewInspectorFromRedisClient(f.rdb)
	for {
		info, err := insp.GetTaskInfo(jobs.QueueAgent, jobs.FixTaskID("octo/hello", 7))
		if err != nil {
			t.Fatal(err)
		}
		if info.State == asynq.TaskStateCompleted {
			break
		}
		time.Sleep(20 * time.Millisecond) // asynq marks it completed after the handler returns
	}

	metas, err := f.store.List(ctx, scanLimit)
	if err != nil {
		t.Fatal(err)
	}
	byDelivery := map[string][]runs.Meta{}
	for _, m := range metas {
		byDelivery[m.DeliveryID] = append(byDelivery[m.DeliveryID], m)
	}
	// A queue no task was ever enqueued on has no tasks, and no error.
	found, err := insp.Queues()
	if err != nil || slices.Contains(found, "never-used") {
		t.Fatalf("queues in Redis: %q, %v; want no never-used", found, err)
	}
	if q, err := listQueue(insp, "never-used", false, "", byDelivery); err != nil || len(q.Tasks) != 0 {
		t.Errorf("a queue never used: %+v, %v; want no tasks, no error", q, err)
	}
	q, err := listQueue(insp, jobs.QueueAgent, true, "", byDelivery)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ State, ID, Target, When, Run string }
	var got []row
	for _, r := range q.Tasks {
		run := ""
		if r.Run != nil {
			run = r.Run.URL + " " + r.Run.Status.Label
		}
		got = append(got, row{r.State, r.ID, r.Target, r.WhenLabel, run})
	}
	want := []row{
		{"active", "revise:octo/other#3", "octo/other #3", "", "/admin/runs/" + runningRunID + " Running"},
		{"scheduled", "fix:octo/hello#5", "octo/hello #5", "runs at", "/admin/runs?delivery=d-5 Running"},
		{"completed", "fix:octo/hello#7", "octo/hello #7", "completed at", "/admin/runs/" + testRunID + " Pull request opened"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the agent queue's tasks (-want +got):\n%s", diff)
	}
	if q.StatsURL != "/admin/queues#queue-agent" {
		t.Errorf("the queue's link to its counts = %q, want /admin/queues#queue-agent", q.StatsURL)
	}

	ts := f.serve(t, testToken)
	code, _, body := fetch(t, "GET", ts.URL+"/admin/tasks", bearer(testToken), nil)
	if code != http.StatusOK || !strings.Contains(body, `<meta http-equiv="refresh" content="10">`) || !strings.Contains(body, `href="/admin/runs?delivery=d-5"`) {
		t.Errorf("GET /admin/tasks with an active task = %d, want 200, reloading, with the link to the runs of d-5:\n%s", code, body)
	}
}
