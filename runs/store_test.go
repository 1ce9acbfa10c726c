package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/internal/redistest"
)

var t0 = time.Date(2025, 1, 2, 15, 4, 5, 0, time.UTC)

// clock is a settable test clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func newRedis(t *testing.T) redis.UniversalClient {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func newStore(t *testing.T, rdb redis.UniversalClient, c *clock, edit ...func(*Options)) *Store {
	t.Helper()
	o := Options{Dir: filepath.Join(t.TempDir(), "runs"), Redis: rdb, Retention: 336 * time.Hour, Now: c.Now}
	for _, e := range edit {
		e(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewID(t *testing.T) {
	t.Parallel()
	a := NewID(t0)
	b := NewID(t0.Add(time.Second))
	if !ValidID(a) || !strings.HasPrefix(a, "20250102T150405Z-") {
		t.Errorf("NewID = %q, want 20250102T150405Z-<8 hex>", a)
	}
	if NewID(t0) == a {
		t.Errorf("two ids of the same second are equal: %q", a)
	}
	if !(a < b) {
		t.Errorf("ids do not sort by time: %q !< %q", a, b)
	}
	for _, bad := range []string{"", "../x", "20250102T150405Z-1234567", "20250102T150405Z-ABCDEF12", a + "/x"} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q) = true", bad)
		}
	}
}

func TestRunRecord(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	c := &clock{now: t0}
	s := newStore(t, rdb, c)
	ctx := context.Background()
	r, err := s.Create(ctx, Meta{Kind: "fix", Repo: "octo/widget", Number: 12, Requester: "alice", Model: "openai/gpt-5"})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	defer r.Close()
	if !strings.HasPrefix(r.ID(), "20250102T150405Z-") {
		t.Errorf("run id = %q, want the start time as prefix", r.ID())
	}
	fmt.Fprintln(r.Trajectory(), `{"type":"header"}`)
	fmt.Fprintln(r.Trajectory(), `{"type":"step","step":1}`)
	if err := r.SetPatch("diff --git a/x b/x\n"); err != nil {
		t.Fatal(err)
	}
	c.now = t0.Add(90 * time.Second)
	err = r.Update(func(m *Meta) {
		m.Status, m.ExitStatus, m.Steps, m.CostUSD = "pr_opened", "submitted", 7, 0.42
		m.Tokens = Tokens{Input: 1000, Output: 200}
		m.PR, m.PRURL = 13, "https://github.com/octo/widget/pull/13"
		m.Ended, m.Duration = c.now, 90*time.Second
		m.RunID = "overwritten"
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Save(ctx); err != nil {
		t.Fatalf("Save: %v", err)
	}

	want := Record{
		Meta: Meta{V: 1, RunID: r.ID(), Kind: "fix", Repo: "octo/widget", Number: 12, Requester: "alice",
			Status: "pr_opened", ExitStatus: "submitted", Steps: 7, CostUSD: 0.42, Tokens: Tokens{Input: 1000, Output: 200},
			Model: "openai/gpt-5", PR: 13, PRURL: "https://github.com/octo/widget/pull/13",
			Started: t0, Ended: t0.Add(90 * time.Second), Duration: 90 * time.Second},
		Trajectory: []byte("{\"type\":\"header\"}\n{\"type\":\"step\",\"step\":1}\n"),
		Patch:      "diff --git a/x b/x\n",
	}
	// Another process (another data dir) reads it from Redis.
	other := newStore(t, rdb, c)
	got, err := other.Get(ctx, r.ID())
	if err != nil {
		t.Fatalf("Get from another store: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("record from Redis (-want +got):\n%s", diff)
	}
	// The files on disk.
	for _, name := range []string{MetaFile, TrajectoryFile, PatchFile} {
		fi, err := os.Stat(filepath.Join(r.Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", name, fi.Mode().Perm())
		}
	}
	ttl, err := rdb.TTL(ctx, runPrefix+r.ID()).Result()
	if err != nil || ttl <= 0 || ttl > 336*time.Hour {
		t.Errorf("TTL of the mirror = %v, %v; want the retention", ttl, err)
	}
	// With the mirror gone, this host still serves it from disk.
	if err := rdb.Del(ctx, runPrefix+r.ID()).Err(); err != nil {
		t.Fatal(err)
	}
	got, err = s.Get(ctx, r.ID())
	if err != nil {
		t.Fatalf("Get from disk: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("record from disk (-want +got):\n%s", diff)
	}
	if _, err := other.Get(ctx, r.ID()); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a run neither Redis nor this disk has = %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "../../etc/passwd"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a malformed id = %v, want ErrNotFound", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Trajectory().Write([]byte("x\n")); err == nil {
		t.Errorf("trajectory write after Close succeeded")
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	c := &clock{now: t0}
	s := newStore(t, rdb, c, func(o *Options) { o.Retention = 48 * time.Hour })
	ctx := context.Background()
	var ids []string
	for i := range 4 {
		c.now = t0.Add(time.Duration(i) * 24 * time.Hour)
		r, err := s.Create(ctx, Meta{Kind: "fix", Repo: "octo/widget", Number: i + 1})
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		ids = append(ids, r.ID())
	}
	// Now is day 3: the run of day 0 is older than 48 h.
	got, err := s.List(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var numbers []int
	for _, m := range got {
		numbers = append(numbers, m.Number)
	}
	if diff := cmp.Diff([]int{4, 3, 2}, numbers); diff != "" {
		t.Errorf("List (newest first, expired left out) (-want +got):\n%s", diff)
	}
	got, err = s.List(ctx, 2)
	if err != nil || len(got) != 2 || got[0].RunID != ids[3] {
		t.Errorf("List(2) = %d runs starting %v, %v; want the 2 newest", len(got), got, err)
	}
	if _, err := s.List(ctx, 0); err == nil {
		t.Errorf("List(0) succeeded, want an error")
	}
	n, err := s.Prune()
	if err != nil || n != 1 {
		t.Errorf("Prune = %d, %v; want 1 directory removed", n, err)
	}
	left, _ := os.ReadDir(s.dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if diff := cmp.Diff(ids[1:], names); diff != "" {
		t.Errorf("run directories after Prune (-want +got):\n%s", diff)
	}
}

func TestOpenOnAnotherHost(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	c := &clock{now: t0}
	ctx := context.Background()
	first := newStore(t, rdb, c)
	r, err := first.Create(ctx, Meta{Kind: "fix", Repo: "octo/widget", Number: 1})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(r.Trajectory(), `{"type":"header"}`)
	if err := r.Save(ctx); err != nil {
		t.Fatal(err)
	}
	r.Close()

	second := newStore(t, rdb, c)
	again, err := second.Open(ctx, r.ID(), Meta{Kind: "ignored"})
	if err != nil {
		t.Fatalf("Open on another host: %v", err)
	}
	fmt.Fprintln(again.Trajectory(), `{"type":"result"}`)
	if err := again.Save(ctx); err != nil {
		t.Fatal(err)
	}
	again.Close()
	got, err := first.Get(ctx, r.ID())
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"type\":\"header\"}\n{\"type\":\"result\"}\n"; string(got.Trajectory) != want || got.Meta.Kind != "fix" {
		t.Errorf("after Open elsewhere: trajectory %q kind %q, want %q and the first host's meta", got.Trajectory, got.Meta.Kind, want)
	}

	// A run nobody has is created from the given meta.
	fresh, err := second.Open(ctx, NewID(t0), Meta{Kind: "revise", Repo: "octo/widget", Number: 2})
	if err != nil {
		t.Fatal(err)
	}
	fresh.Close()
	if m := fresh.Meta(); m.Kind != "revise" || m.Status != StatusRunning {
		t.Errorf("Open of an unknown run = %+v, want it created from the meta", m)
	}
}

func TestMirrorBound(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	s := newStore(t, rdb, &clock{now: t0}, func(o *Options) { o.MaxMirrorBytes = 25 })
	ctx := context.Background()
	r, err := s.Create(ctx, Meta{Kind: "fix", Repo: "octo/widget", Number: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fmt.Fprint(r.Trajectory(), "{\"a\":1}\n{\"b\":2}\n{\"c\":33333}\n")
	if err := r.Save(ctx); err != nil {
		t.Fatal(err)
	}
	vals, err := rdb.HGet(ctx, runPrefix+r.ID(), "trajectory").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	got, err := gunzipField(string(vals))
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"a\":1}\n{\"b\":2}\n"; string(got) != want {
		t.Errorf("mirrored trajectory = %q, want the whole records within the bound %q", got, want)
	}
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	rdb := newRedis(t)
	for name, o := range map[string]Options{
		"no dir":       {Redis: rdb, Retention: time.Hour},
		"no redis":     {Dir: t.TempDir(), Retention: time.Hour},
		"no retention": {Dir: t.TempDir(), Redis: rdb},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("%s: New succeeded, want an error", name)
		}
	}
	s := newStore(t, rdb, &clock{now: t0})
	if _, err := s.Create(context.Background(), Meta{RunID: "bad id"}); err == nil {
		t.Errorf("Create with a malformed id succeeded")
	}
}
