package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/internal/redistest"
)

func newState(t *testing.T) state {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	return state{rdb: rdb, poll: 5 * time.Millisecond}
}

func TestLockJob(t *testing.T) {
	s := newState(t)
	ctx := context.Background()
	unlock, err := s.lockJob(ctx, "fix:o/r#1:d-1")
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.lockJob(short, "fix:o/r#1:d-1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second lock while held = %v, want the context's deadline", err)
	}
	other, err := s.lockJob(ctx, "fix:o/r#1:d-2")
	if err != nil {
		t.Fatalf("lock of another job: %v", err)
	}
	other()
	got := make(chan error, 1)
	go func() {
		u, err := s.lockJob(ctx, "fix:o/r#1:d-1")
		if err == nil {
			u()
		}
		got <- err
	}()
	unlock()
	if err := <-got; err != nil {
		t.Errorf("waiter after unlock: %v", err)
	}
	if n, _ := s.rdb.Exists(ctx, jobLockPrefix+"fix:o/r#1:d-1").Result(); n != 0 {
		t.Errorf("the lock key is left after unlock")
	}
}

// TestStatusCommentCreatedOnce: tasks racing for a job's status comment
// create it once and all get it.
func TestStatusCommentCreatedOnce(t *testing.T) {
	s := newState(t)
	var mu sync.Mutex
	created := 0
	create := func(context.Context) (commentRef, error) {
		mu.Lock()
		defer mu.Unlock()
		created++
		time.Sleep(20 * time.Millisecond)
		return commentRef{ID: 7, URL: "https://example.com/c/7"}, nil
	}
	var wg sync.WaitGroup
	refs := make([]commentRef, 5)
	errs := make([]error, 5)
	for i := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			refs[i], errs[i] = s.statusComment(context.Background(), "fix:o/r#1:d-1", create)
		}()
	}
	wg.Wait()
	for i := range refs {
		if errs[i] != nil || refs[i] != (commentRef{ID: 7, URL: "https://example.com/c/7"}) {
			t.Errorf("task %d got %+v, %v", i, refs[i], errs[i])
		}
	}
	if created != 1 {
		t.Errorf("created %d comments, want 1", created)
	}
	// A creation that fails leaves the key free for the next try.
	boom := errors.New("boom")
	if _, err := s.statusComment(context.Background(), "fix:o/r#2:d-1", func(context.Context) (commentRef, error) {
		return commentRef{}, boom
	}); !errors.Is(err, boom) {
		t.Fatalf("failed creation = %v, want boom", err)
	}
	ref, err := s.statusComment(context.Background(), "fix:o/r#2:d-1", create)
	if err != nil || ref.ID != 7 {
		t.Errorf("after a failed creation: %+v, %v; want the comment created", ref, err)
	}
}
