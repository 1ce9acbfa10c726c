package redeliver

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/ghapp"
)

func TestLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const key = "test:lock"
	a, ok, err := acquire(ctx, e.rdb, key, time.Minute)
	if err != nil || !ok {
		t.Fatalf("first acquire = %v, %v; want the lock", ok, err)
	}
	if _, ok, err := acquire(ctx, e.rdb, key, time.Minute); err != nil || ok {
		t.Fatalf("second acquire = %v, %v; want none while held", ok, err)
	}
	pttl := func() time.Duration { return e.rdb.PTTL(ctx, key).Val() }
	if d := pttl(); d <= 0 || d > time.Minute {
		t.Errorf("lock PTTL = %v, want within (0, 1m]", d)
	}
	// A holder with another token neither renews nor releases it.
	other := &lock{rdb: e.rdb, key: key, token: "not-the-holder", ttl: time.Hour}
	if ok, err := other.renew(ctx); err != nil || ok {
		t.Errorf("renew by another = %v, %v; want false", ok, err)
	}
	if err := other.release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.rdb.Get(ctx, key).Val(); got != a.token {
		t.Errorf("after another's release the lock holds %q, want the holder's token", got)
	}
	// Renewal sets the TTL again.
	e.rdb.PExpire(ctx, key, time.Second)
	if ok, err := a.renew(ctx); err != nil || !ok {
		t.Errorf("renew = %v, %v; want true", ok, err)
	}
	if d := pttl(); d <= time.Second {
		t.Errorf("PTTL after renew = %v, want the full minute again", d)
	}
	if err := a.release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.rdb.Exists(ctx, key).Val(); n != 0 {
		t.Errorf("lock exists after release")
	}
	if _, ok, err := acquire(ctx, e.rdb, key, time.Minute); err != nil || !ok {
		t.Errorf("acquire after release = %v, %v; want the lock", ok, err)
	}
}

// TestLockKeepNoticesTakeover: a holder whose lock was taken over is told
// to stop.
func TestLockKeepNoticesTakeover(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, ok, err := acquire(ctx, e.rdb, "test:lock", 30*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("acquire = %v, %v", ok, err)
	}
	lost := make(chan error, 1)
	go l.keep(ctx, func(err error) { lost <- err })
	e.rdb.Set(ctx, "test:lock", "another-worker", time.Minute)
	select {
	case err := <-lost:
		if !strings.Contains(err.Error(), "taken over") {
			t.Errorf("lost: %v, want taken over", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("keep did not notice the takeover")
	}
	if got := e.rdb.Get(ctx, "test:lock").Val(); got != "another-worker" {
		t.Errorf("lock holds %q, want the new holder's", got)
	}
}

// clock is a settable time for the sweeper.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func TestRound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clk := &clock{t: e.now}
	const every = 5 * time.Minute
	s := e.sweeper(t, e.app, func(o *Options) { o.Now = clk.now })
	ctx := context.Background()

	early := e.add("g-early", 503, 20*time.Minute)
	mid := e.add("g-mid", 0, 10*time.Minute)
	e.add("g-ok", 202, 5*time.Minute)
	late := e.add("g-late", 503, 2*time.Minute) // no success after it: held back
	e.add("g-before", 503, 2*time.Hour)         // before the first round's hour

	// Another worker holds the lock: nothing happens.
	e.rdb.Set(ctx, s.key("leader"), "another-worker", time.Minute)
	if res, err := s.round(ctx, every); err != nil || res != nil {
		t.Fatalf("round while another leads = %+v, %v; want nothing", res, err)
	}
	e.rdb.Del(ctx, s.key("leader"))

	res, err := s.round(ctx, every)
	if err != nil || res == nil {
		t.Fatalf("round = %+v, %v; want a sweep", res, err)
	}
	if got, want := res.Since, e.now.Add(-time.Hour); !got.Equal(want) {
		t.Errorf("first round since %v, want an hour back (%v)", got, want)
	}
	if diff := cmp.Diff(map[string]Outcome{"g-early": Redelivered, "g-mid": Redelivered, "g-late": Held}, outcomes(*res)); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{early, mid}, e.f.Redeliveries()); diff != "" {
		t.Errorf("redelivered ids (-want +got):\n%s", diff)
	}
	if n := e.rdb.Exists(ctx, s.key("leader"), s.key("done:g-late")).Val(); n != 0 {
		t.Errorf("after the round the lock or a claim of the held delivery exists")
	}

	// Right after, another worker's round is skipped: swept recently.
	clk.set(e.now.Add(every / 4))
	if res, err := s.round(ctx, every); err != nil || res != nil {
		t.Errorf("round a quarter interval later = %+v, %v; want it skipped", res, err)
	}

	// An interval later, the round looks back to an interval before the
	// last sweep; once a success follows g-late, it is redelivered.
	e.add("g-ok-2", 202, -time.Minute)
	clk.set(e.now.Add(every))
	res, err = s.round(ctx, every)
	if err != nil || res == nil {
		t.Fatalf("round an interval later = %+v, %v; want a sweep", res, err)
	}
	if got, want := res.Since, e.now.Add(-every); !got.Equal(want.Truncate(time.Millisecond)) {
		t.Errorf("second round since %v, want %v", got, want)
	}
	if diff := cmp.Diff([]int64{early, mid, late}, e.f.Redeliveries()); diff != "" {
		t.Errorf("redelivered ids (-want +got):\n%s", diff)
	}
}

// blocking lists only when its context ends, so a test can act while a
// sweep is in progress.
type blocking struct {
	Deliveries
	listing chan struct{}
}

func (b blocking) ListHookDeliveries(ctx context.Context, _ time.Time) ([]ghapp.HookDelivery, error) {
	close(b.listing)
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestRoundStopsWhenLockLost: a leader whose lock is taken over mid-sweep
// stops sweeping.
func TestRoundStopsWhenLockLost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.add("g-1", 503, 10*time.Minute)
	e.add("g-ok", 202, time.Minute)
	gh := blocking{Deliveries: e.app, listing: make(chan struct{})}
	s := e.sweeper(t, gh, func(o *Options) { o.LockTTL = 30 * time.Millisecond })
	done := make(chan error, 1)
	go func() {
		_, err := s.round(context.Background(), time.Minute)
		done <- err
	}()
	<-gh.listing
	e.rdb.Set(context.Background(), s.key("leader"), "another-worker", time.Minute)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "sweeper lock lost") {
			t.Errorf("round = %v, want the lock lost", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("round went on after its lock was taken over")
	}
	if got := e.rdb.Get(context.Background(), s.key("leader")).Val(); got != "another-worker" {
		t.Errorf("the lock holds %q after the round, want the new holder's", got)
	}
	if n := e.rdb.Exists(context.Background(), s.key("last")).Val(); n != 0 {
		t.Errorf("an interrupted sweep was recorded as done")
	}
}

// TestRunTwoWorkers runs the loop of two workers at once: each failed
// delivery is redelivered once.
func TestRunTwoWorkers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.add("g-a", 503, 20*time.Minute)
	b := e.add("g-b", 0, 10*time.Minute)
	e.add("g-ok", 202, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- e.sweeper(t, e.app).Run(ctx, 10*time.Millisecond)
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(e.f.Redeliveries()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// Let a few more rounds pass, then stop both loops.
	for n := len(e.f.Calls()); len(e.f.Calls()) < n+6 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Run = %v, want nil after cancel", err)
		}
	}
	got := e.f.Redeliveries()
	slices.Sort(got)
	if diff := cmp.Diff([]int64{a, b}, got); diff != "" {
		t.Errorf("redelivered ids (-want +got):\n%s", diff)
	}
}

func TestRunRefusesBadInterval(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.sweeper(t, e.app).Run(context.Background(), 0); err == nil {
		t.Error("Run with interval 0 = nil, want an error")
	}
}

// TestRoundOnMiniredis runs a round on the in-process Redis that `bot
// serve` embeds without AGENTFIX_REDIS_URL: its Lua scripts must work there
// too.
func TestRoundOnMiniredis(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mr := miniredis.RunT(t)
	e.rdb = redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { e.rdb.Close() })
	id := e.add("g-1", 503, 10*time.Minute)
	e.add("g-ok", 202, time.Minute)
	res, err := e.sweeper(t, e.app).round(context.Background(), time.Minute)
	if err != nil || res == nil || res.Count(Redelivered) != 1 {
		t.Fatalf("round = %+v, %v; want one redelivery", res, err)
	}
	if diff := cmp.Diff([]int64{id}, e.f.Redeliveries()); diff != "" {
		t.Errorf("redelivered ids (-want +got):\n%s", diff)
	}
	if mr.Exists("agentfix:redeliver:4242:leader") {
		t.Errorf("the lock was not released")
	}
}
