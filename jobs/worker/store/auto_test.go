package store

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/repo"
)

// TestTakeAutoRound: each round id counts once, at most max of them per
// pull request, even when many workers take the same one at once; a
// released round frees its place.
func TestTakeAutoRound(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	r := repo.Name{Owner: "Octo", Name: "Widget"}
	type take struct {
		answer AutoTake
		n      int
	}
	got := func(id string) take {
		t.Helper()
		a, n, err := s.TakeAutoRound(ctx, r, 7, id, 2)
		if err != nil {
			t.Fatal(err)
		}
		return take{a, n}
	}
	var wg sync.WaitGroup
	answers := make([]AutoTake, 8)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], _, _ = s.TakeAutoRound(ctx, r, 7, "ci aaa", 2)
		}()
	}
	wg.Wait()
	taken := 0
	for _, a := range answers {
		if a == AutoTaken {
			taken++
		}
	}
	if taken != 1 {
		t.Errorf("the same round taken %d times at once (%v), want once", taken, answers)
	}
	steps := []struct {
		id   string
		want take
	}{
		{"ci aaa", take{AutoSeen, 1}},
		{"ci bbb", take{AutoTaken, 2}},
		{"ci ccc", take{AutoFull, 2}},
		{"ci bbb", take{AutoSeen, 2}},
	}
	for _, st := range steps {
		if diff := cmp.Diff(st.want, got(st.id), cmp.AllowUnexported(take{})); diff != "" {
			t.Errorf("take %s (-want +got):\n%s", st.id, diff)
		}
	}
	if err := s.ReleaseAutoRound(ctx, r, 7, "ci bbb"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(take{AutoTaken, 2}, got("ci ccc"), cmp.AllowUnexported(take{})); diff != "" {
		t.Errorf("take after a release (-want +got):\n%s", diff)
	}
	if a, n, err := s.TakeAutoRound(ctx, repo.Name{Owner: "octo", Name: "widget"}, 8, "ci ccc", 2); err != nil || a != AutoTaken || n != 1 {
		t.Errorf("another pull request: %s %d %v, want its first round", a, n, err)
	}
}

// TestAutoStopAndRerun: a stop is kept per pull request until a resume
// lifts it (it never expires), a re-run once per commit with the checks it
// re-ran.
func TestAutoStopAndRerun(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	r := repo.Name{Owner: "octo", Name: "widget"}
	if _, ok, err := s.AutoStopped(ctx, r, 3); ok || err != nil {
		t.Errorf("AutoStopped before a stop = %v, %v", ok, err)
	}
	if err := s.StopAuto(ctx, r, 3, "alice"); err != nil {
		t.Fatal(err)
	}
	if by, ok, err := s.AutoStopped(ctx, repo.Name{Owner: "Octo", Name: "Widget"}, 3); !ok || by != "alice" || err != nil {
		t.Errorf("AutoStopped = %q, %v, %v; want alice", by, ok, err)
	}
	if _, ok, _ := s.AutoStopped(ctx, r, 4); ok {
		t.Error("another pull request is stopped too")
	}
	if ttl, err := s.rdb.TTL(ctx, autoStopPrefix+prKey(r, 3)).Result(); err != nil || ttl != -1 {
		t.Errorf("the stop's TTL = %v, %v; want none (-1): a stop holds until it is lifted", ttl, err)
	}
	if by, err := s.ResumeAuto(ctx, r, 3); by != "alice" || err != nil {
		t.Errorf("ResumeAuto = %q, %v; want alice's stop lifted", by, err)
	}
	if _, ok, err := s.AutoStopped(ctx, r, 3); ok || err != nil {
		t.Errorf("AutoStopped after the resume = %v, %v; want not stopped", ok, err)
	}
	if by, err := s.ResumeAuto(ctx, r, 3); by != "" || err != nil {
		t.Errorf("a second ResumeAuto = %q, %v; want nothing to lift", by, err)
	}
	if first, err := s.SaveRerun(ctx, r, "abc", []string{"test", "lint"}); !first || err != nil {
		t.Errorf("first SaveRerun = %v, %v", first, err)
	}
	if first, err := s.SaveRerun(ctx, r, "abc", []string{"other"}); first || err != nil {
		t.Errorf("second SaveRerun = %v, %v; want it refused", first, err)
	}
	checks, ok, err := s.Rerun(ctx, r, "abc")
	if !ok || err != nil || !cmp.Equal(checks, []string{"test", "lint"}) {
		t.Errorf("Rerun = %v, %v, %v; want the first re-run's checks", checks, ok, err)
	}
	if _, ok, _ := s.Rerun(ctx, r, "def"); ok {
		t.Error("a re-run on another commit")
	}
}
