package store

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/internal/redistest"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/repo"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	return New(rdb, 5*time.Millisecond)
}

func TestLockJob(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	unlock, err := s.LockJob(ctx, "fix:o/r#1:d-1")
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.LockJob(short, "fix:o/r#1:d-1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second lock while held = %v, want the context's deadline", err)
	}
	other, err := s.LockJob(ctx, "fix:o/r#1:d-2")
	if err != nil {
		t.Fatalf("lock of another job: %v", err)
	}
	other()
	got := make(chan error, 1)
	go func() {
		u, err := s.LockJob(ctx, "fix:o/r#1:d-1")
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
	t.Parallel()
	s := newStore(t)
	var mu sync.Mutex
	created := 0
	create := func(context.Context) (CommentRef, error) {
		mu.Lock()
		defer mu.Unlock()
		created++
		time.Sleep(20 * time.Millisecond)
		return CommentRef{ID: 7, URL: "https://example.com/c/7"}, nil
	}
	var wg sync.WaitGroup
	refs := make([]CommentRef, 5)
	errs := make([]error, 5)
	for i := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			refs[i], errs[i] = s.StatusComment(context.Background(), "fix:o/r#1:d-1", create)
		}()
	}
	wg.Wait()
	for i := range refs {
		if errs[i] != nil || refs[i] != (CommentRef{ID: 7, URL: "https://example.com/c/7"}) {
			t.Errorf("task %d got %+v, %v", i, refs[i], errs[i])
		}
	}
	if created != 1 {
		t.Errorf("created %d comments, want 1", created)
	}
	// A creation that fails leaves the key free for the next try.
	boom := errors.New("boom")
	if _, err := s.StatusComment(context.Background(), "fix:o/r#2:d-1", func(context.Context) (CommentRef, error) {
		return CommentRef{}, boom
	}); !errors.Is(err, boom) {
		t.Fatalf("failed creation = %v, want boom", err)
	}
	ref, err := s.StatusComment(context.Background(), "fix:o/r#2:d-1", create)
	if err != nil || ref.ID != 7 {
		t.Errorf("after a failed creation: %+v, %v; want the comment created", ref, err)
	}
}

// TestKeptCommandsAroundTheRoundEnd: a command kept before the round's end
// is counted by the round; one kept after it sees the round-end marker, so
// its notice starts the follow-up itself; a new round clears the marker.
func TestKeptCommandsAroundTheRoundEnd(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	const id = "revise:octo/widget#2"
	cmd := func(d string) jobs.KeptCommand {
		return jobs.KeptCommand{DeliveryID: d, Requester: jobs.User{Login: "bob"}, Instructions: "do " + d}
	}
	if ended, err := s.Keep(ctx, id, cmd("k1")); err != nil || ended != "" {
		t.Fatalf("keep while the round runs = %q, %v; want no ended round", ended, err)
	}
	if n, err := s.RoundEnded(ctx, id, "d1"); err != nil || n != 1 {
		t.Fatalf("roundEnded = %d, %v; want 1 kept command", n, err)
	}
	if ended, err := s.Keep(ctx, id, cmd("k2")); err != nil || ended != "d1" {
		t.Fatalf("keep after the round ended = %q, %v; want d1", ended, err)
	}
	kept, err := s.KeptCommands(ctx, id)
	if err != nil || len(kept) != 2 || kept[0].DeliveryID != "k1" || kept[1].Instructions != "do k2" {
		t.Fatalf("kept = %+v, %v", kept, err)
	}
	if err := s.TakeKept(ctx, id, kept[:1]); err != nil {
		t.Fatal(err)
	}
	// A retry that took them already takes nothing more.
	if err := s.TakeKept(ctx, id, kept[:1]); err != nil {
		t.Fatal(err)
	}
	if left, err := s.KeptCommands(ctx, id); err != nil || len(left) != 1 || left[0].DeliveryID != "k2" {
		t.Fatalf("kept after taking k1 twice = %+v, %v; want k2", left, err)
	}
	if err := s.RoundStarted(ctx, id); err != nil {
		t.Fatal(err)
	}
	if ended, err := s.Keep(ctx, id, cmd("k3")); err != nil || ended != "" {
		t.Fatalf("keep after a new round started = %q, %v; want no ended round", ended, err)
	}
	dropped, err := s.DropKept(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var ds []string
	for _, c := range dropped {
		ds = append(ds, c.DeliveryID)
	}
	if diff := cmp.Diff([]string{"k2", "k3"}, ds); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	if kept, _ := s.KeptCommands(ctx, id); len(kept) != 0 {
		t.Errorf("kept after the drop = %+v, want none", kept)
	}
}

// TestClaimsAndCheckRuns: a claim is won once until freed; check runs are
// remembered per head commit.
func TestClaimsAndCheckRuns(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	c := RefusalClaim(repo.Name{Owner: "Octo", Name: "Widget"}, 3, "Mallory")
	for i, want := range []bool{true, false} {
		if got, err := s.ClaimOnce(ctx, c); err != nil || got != want {
			t.Fatalf("claim %d = %v, %v; want %v", i, got, err, want)
		}
	}
	if got, _ := s.ClaimOnce(ctx, RefusalClaim(repo.Name{Owner: "octo", Name: "widget"}, 3, "mallory")); got {
		t.Error("the claim differs by case, want one per user per issue")
	}
	s.Unclaim(ctx, c)
	if got, err := s.ClaimOnce(ctx, c); err != nil || !got {
		t.Errorf("claim after Unclaim = %v, %v; want won", got, err)
	}
	if runs, err := s.CheckRuns(ctx, "fix:o/r#1:d-1"); err != nil || len(runs) != 0 {
		t.Fatalf("check runs before any = %v, %v", runs, err)
	}
	for _, r := range []CheckRun{{SHA: "aaa", ID: 7}, {SHA: "bbb", ID: 8}, {SHA: "aaa", ID: 7, Done: true}} {
		if err := s.SetCheckRun(ctx, "fix:o/r#1:d-1", r); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := s.CheckRuns(ctx, "fix:o/r#1:d-1")
	sort.Slice(runs, func(i, k int) bool { return runs[i].SHA < runs[k].SHA })
	if diff := cmp.Diff([]CheckRun{{SHA: "aaa", ID: 7, Done: true}, {SHA: "bbb", ID: 8}}, runs); err != nil || diff != "" {
		t.Errorf("check runs = %v (-want +got):\n%s", err, diff)
	}
}
