package jobs

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentfix/agentfix/internal/redistest"
	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// env is one test's Redis, queue client and inspector.
type env struct {
	rdb       *redis.Client
	client    *Client
	inspector *asynq.Inspector
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	return &env{rdb: rdb, client: NewClient(rdb, 45*time.Minute), inspector: asynq.NewInspectorFromRedisClient(rdb)}
}

// tasks lists the ids of all tasks of queue, in any state.
func (e *env) tasks(t *testing.T, queue string) map[string]*asynq.TaskInfo {
	t.Helper()
	out := map[string]*asynq.TaskInfo{}
	list := []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){
		e.inspector.ListPendingTasks, e.inspector.ListActiveTasks, e.inspector.ListScheduledTasks,
		e.inspector.ListRetryTasks, e.inspector.ListArchivedTasks, e.inspector.ListCompletedTasks,
	}
	for _, l := range list {
		infos, err := l(queue)
		if errors.Is(err, asynq.ErrQueueNotFound) {
			return out
		}
		if err != nil {
			t.Fatalf("list %s tasks: %v", queue, err)
		}
		for _, info := range infos {
			out[info.ID] = info
		}
	}
	return out
}

func (e *env) notice(t *testing.T, deliveryID string) Notice {
	t.Helper()
	info, err := e.inspector.GetTaskInfo(QueueInteractive, NoticeTaskID(deliveryID))
	if err != nil {
		t.Fatalf("get notice of %s: %v", deliveryID, err)
	}
	n, err := Decode[Notice](info.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// runWorker processes the agent queue with handle until the test ends.
func (e *env) runWorker(t *testing.T, handle asynq.HandlerFunc) {
	t.Helper()
	srv := asynq.NewServerFromRedisClient(e.rdb, asynq.Config{
		Queues: map[string]int{QueueAgent: 1}, Concurrency: 1, LogLevel: asynq.FatalLevel,
	})
	if err := srv.Start(handle); err != nil {
		t.Fatalf("start asynq server: %v", err)
	}
	t.Cleanup(srv.Shutdown)
}

// waitState polls until the task is in state (the worker moves it).
func (e *env) waitState(t *testing.T, id string, state asynq.TaskState) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		info, err := e.inspector.GetTaskInfo(QueueAgent, id)
		if err == nil && info.State == state {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s never reached state %s (last: %v, %v)", id, state, info, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func fix(delivery string) FixIssue {
	return FixIssue{
		DeliveryID: delivery, Installation: 7, Repo: testRepo(), Number: 3,
		Trigger: Trigger{Kind: TriggerLabel}, Requester: User{Login: "alice", ID: 2, Type: "User"},
	}
}

func TestTaskOptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.client.SubmitFix(ctx, fix("d1")); err != nil {
		t.Fatal(err)
	}
	if err := e.client.SubmitCancel(ctx, Cancel{DeliveryID: "d2", Installation: 7, Reason: CancelInstallationDeleted}); err != nil {
		t.Fatal(err)
	}
	type opts struct {
		Type, Queue string
		MaxRetry    int
		Timeout     time.Duration
		Retention   time.Duration
	}
	tests := []struct {
		queue, id string
		want      opts
	}{
		{QueueAgent, "fix:octo/repo#3", opts{TypeFix, QueueAgent, 2, 60 * time.Minute, 24 * time.Hour}},
		{QueueInteractive, "notice:d1", opts{TypeNotice, QueueInteractive, 5, 2 * time.Minute, 0}},
		{QueueInteractive, "cancel:d2", opts{TypeCancel, QueueInteractive, 5, 2 * time.Minute, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			info, err := e.inspector.GetTaskInfo(tt.queue, tt.id)
			if err != nil {
				t.Fatal(err)
			}
			got := opts{info.Type, info.Queue, info.MaxRetry, info.Timeout, info.Retention}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("task options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSubmitFixConflicts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const id = "fix:octo/repo#3"

	t.Run("queued then already working", func(t *testing.T) {
		e := newEnv(t)
		for i, want := range []Outcome{OutcomeQueued, OutcomeAlreadyWorking, OutcomeAlreadyWorking} {
			d := fmt.Sprintf("d%d", i)
			got, err := e.client.SubmitFix(ctx, fix(d))
			if err != nil || got != want {
				t.Fatalf("SubmitFix(%s) = %q, %v; want %q", d, got, err, want)
			}
			if n := e.notice(t, d); n.Outcome != want || n.AgentTaskID != id {
				t.Errorf("notice of %s: outcome %q task %q, want %q %q", d, n.Outcome, n.AgentTaskID, want, id)
			}
		}
		if got := len(e.tasks(t, QueueAgent)); got != 1 {
			t.Errorf("agent tasks = %d, want 1", got)
		}
		if got := len(e.tasks(t, QueueInteractive)); got != 3 {
			t.Errorf("notices = %d, want 3", got)
		}
	})

	t.Run("same delivery is a duplicate", func(t *testing.T) {
		e := newEnv(t)
		if _, err := e.client.SubmitFix(ctx, fix("d1")); err != nil {
			t.Fatal(err)
		}
		_, err := e.client.SubmitFix(ctx, fix("d1"))
		if !errors.Is(err, ErrDuplicate) {
			t.Errorf("second SubmitFix of d1: err = %v, want ErrDuplicate", err)
		}
	})

	t.Run("redelivery after a half-failed enqueue is ours", func(t *testing.T) {
		e := newEnv(t)
		if _, err := e.client.SubmitFix(ctx, fix("d1")); err != nil {
			t.Fatal(err)
		}
		// The notice was never written: the delivery failed after the agent task.
		if err := e.inspector.DeleteTask(QueueInteractive, NoticeTaskID("d1")); err != nil {
			t.Fatal(err)
		}
		got, err := e.client.SubmitFix(ctx, fix("d1"))
		if err != nil || got != OutcomeQueued {
			t.Fatalf("SubmitFix(d1) again = %q, %v; want queued", got, err)
		}
		if n := e.notice(t, "d1"); n.Outcome != OutcomeQueued {
			t.Errorf("notice outcome = %q, want queued", n.Outcome)
		}
	})

	ended := []struct {
		name   string
		handle asynq.HandlerFunc
		state  asynq.TaskState
	}{
		{"completed", func(context.Context, *asynq.Task) error { return nil }, asynq.TaskStateCompleted},
		{"archived", func(context.Context, *asynq.Task) error { return fmt.Errorf("unauthorized: %w", asynq.SkipRetry) }, asynq.TaskStateArchived},
	}
	for _, tt := range ended {
		t.Run("new trigger after the job "+tt.name+" runs again", func(t *testing.T) {
			e := newEnv(t)
			e.runWorker(t, tt.handle)
			if _, err := e.client.SubmitFix(ctx, fix("d1")); err != nil {
				t.Fatal(err)
			}
			e.waitState(t, id, tt.state)
			// A redelivery of the first trigger is still recognised.
			if _, err := e.client.SubmitFix(ctx, fix("d1")); !errors.Is(err, ErrDuplicate) {
				t.Errorf("redelivery of d1 after the job ended: err = %v, want ErrDuplicate", err)
			}
			got, err := e.client.SubmitFix(ctx, fix("d2"))
			if err != nil || got != OutcomeQueued {
				t.Fatalf("SubmitFix(d2) = %q, %v; want queued", got, err)
			}
			e.waitState(t, id, tt.state)
			info, err := e.inspector.GetTaskInfo(QueueAgent, id)
			if err != nil {
				t.Fatal(err)
			}
			if d := payloadDelivery(info.Payload); d != "d2" {
				t.Errorf("agent task payload is from delivery %q, want d2", d)
			}
		})
	}

	t.Run("running job keeps the task", func(t *testing.T) {
		e := newEnv(t)
		started, release := make(chan struct{}), make(chan struct{})
		e.runWorker(t, func(ctx context.Context, _ *asynq.Task) error {
			close(started)
			<-release
			return nil
		})
		defer close(release)
		if _, err := e.client.SubmitFix(ctx, fix("d1")); err != nil {
			t.Fatal(err)
		}
		<-started
		got, err := e.client.SubmitFix(ctx, fix("d2"))
		if err != nil || got != OutcomeAlreadyWorking {
			t.Errorf("SubmitFix(d2) while running = %q, %v; want already_working", got, err)
		}
	})
}

func TestSubmitRevise(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	p := RevisePR{
		Installation: 7, Repo: testRepo(), Number: 9, Trigger: Trigger{Kind: TriggerReview, ReviewID: 80},
		Requester: User{Login: "alice", ID: 2, Type: "User"}, Instructions: "rename it",
		Author: User{Login: "agentfix[bot]", ID: 3, Type: "Bot"},
	}
	for i, want := range []Outcome{OutcomeQueued, OutcomeFollowUpKept} {
		p.DeliveryID = fmt.Sprintf("r%d", i)
		got, err := e.client.SubmitRevise(ctx, p)
		if err != nil || got != want {
			t.Fatalf("SubmitRevise(%s) = %q, %v; want %q", p.DeliveryID, got, err, want)
		}
	}
	wantNotice := Notice{
		V: Version, DeliveryID: "r1", Installation: 7, Repo: testRepo(), Number: 9, IsPR: true,
		Trigger: p.Trigger, Requester: p.Requester, Command: Command{Instructions: "rename it"},
		Author: &p.Author, Outcome: OutcomeFollowUpKept, AgentTaskID: "revise:octo/repo#9",
	}
	if diff := cmp.Diff(wantNotice, e.notice(t, "r1")); diff != "" {
		t.Errorf("follow-up notice (-want +got):\n%s", diff)
	}
}

func TestSubmitNoticeAndCancelDuplicates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	n := Notice{DeliveryID: "h1", Installation: 7, Repo: testRepo(), Number: 3, Command: Command{Verb: VerbHelp}, Outcome: OutcomeHelp}
	c := Cancel{DeliveryID: "c1", Installation: 7, Reason: CancelIssueClosed, Repos: []Repo{testRepo()}, Number: 3}
	for i := range 2 {
		var want error
		if i == 1 {
			want = ErrDuplicate
		}
		if err := e.client.SubmitNotice(ctx, n); !errors.Is(err, want) {
			t.Errorf("SubmitNotice #%d: err = %v, want %v", i+1, err, want)
		}
		if err := e.client.SubmitCancel(ctx, c); !errors.Is(err, want) {
			t.Errorf("SubmitCancel #%d: err = %v, want %v", i+1, err, want)
		}
	}
}

func TestSubmitRedisDown(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	c := NewClient(rdb, time.Hour)
	_, err := c.SubmitFix(context.Background(), fix("d1"))
	if err == nil || errors.Is(err, ErrDuplicate) {
		t.Errorf("SubmitFix with Redis down: err = %v, want a connection error", err)
	}
}
