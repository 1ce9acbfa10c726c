package redeliver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/ghapp/ghfake"
	"github.com/agentfix/agentfix/internal/redistest"
)

// env is a fake GitHub, the real ghapp.App on it, and a real redis-server.
type env struct {
	f   *ghfake.Fake
	app *ghapp.App
	rdb *redis.Client
	now time.Time
}

func newEnv(t *testing.T) *env {
	t.Helper()
	f := ghfake.New(t)
	app, err := ghapp.New(ghapp.Options{
		AppID: f.AppID(), PrivateKey: f.PrivateKeyPEM(), APIURL: f.APIURL(),
		Retry: ghapp.RetryOptions{MaxAttempts: 1},
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	return &env{f: f, app: app, rdb: rdb, now: time.Now()}
}

// add records a delivery made ago before e.now; code 0 is no answer.
func (e *env) add(guid string, code int, ago time.Duration) int64 {
	status := "OK"
	switch {
	case code == 0:
		status = "timed out"
	case code < 200 || code >= 300:
		status = fmt.Sprintf("Invalid HTTP Response: %d", code)
	}
	return e.f.AddDelivery(ghfake.Delivery{
		GUID: guid, Event: "issue_comment", Action: "created", Status: status, StatusCode: code,
		DeliveredAt: e.now.Add(-ago), InstallationID: 7, RepositoryID: 9,
	})
}

func (e *env) sweeper(t *testing.T, gh Deliveries, edit ...func(*Options)) *Sweeper {
	t.Helper()
	o := Options{GitHub: gh, Redis: e.rdb, AppID: e.f.AppID()}
	for _, ed := range edit {
		ed(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// history adds the standard mix of deliveries and returns the ids a sweep
// since six hours ago must redeliver, in order.
func (e *env) history() []int64 {
	e.add("g-old", 503, 8*time.Hour) // before the sweep's start
	e.add("g-recovered", 503, 5*time.Hour)
	e.f.AddDelivery(ghfake.Delivery{GUID: "g-recovered", Event: "issues", Action: "labeled", Status: "OK", StatusCode: 202, DeliveredAt: e.now.Add(-4 * time.Hour), Redelivery: true})
	g503 := e.add("g-503", 503, 3*time.Hour)
	e.add("g-timeout", 0, 2*time.Hour)
	gTimeoutAgain := e.add("g-timeout", 0, 90*time.Minute)
	e.add("g-ok", 202, time.Hour)
	g401 := e.add("g-401", 401, 30*time.Minute)
	return []int64{g503, gTimeoutAgain, g401}
}

// outcomes returns GUID → outcome of a result.
func outcomes(r Result) map[string]Outcome {
	m := map[string]Outcome{}
	for _, rep := range r.Reports {
		m[rep.GUID] = rep.Outcome
	}
	return m
}

func TestSweepRedeliversEachFailedDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := e.history()
	res, err := e.sweeper(t, e.app).Sweep(context.Background(), e.now.Add(-6*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, e.f.Redeliveries()); diff != "" {
		t.Errorf("redelivered ids (-want +got):\n%s", diff)
	}
	if res.Listed != 7 {
		t.Errorf("listed = %d, want 7", res.Listed)
	}
	var got []string
	for _, r := range res.Reports {
		got = append(got, fmt.Sprintf("%s %s attempts=%d latest=%d", r.GUID, r.Outcome, r.Attempts, r.Latest.StatusCode))
	}
	wantReports := []string{"g-503 redelivered attempts=1 latest=503", "g-timeout redelivered attempts=2 latest=0", "g-401 redelivered attempts=1 latest=401"}
	if diff := cmp.Diff(wantReports, got); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
}

// stale serves the first listing it got for every later one, as a sweep
// that listed before another sweep redelivered would see it.
type stale struct {
	Deliveries
	mu    sync.Mutex
	first []ghapp.HookDelivery
}

func (s *stale) ListHookDeliveries(ctx context.Context, since time.Time) ([]ghapp.HookDelivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first == nil {
		ds, err := s.Deliveries.ListHookDeliveries(ctx, since)
		if err != nil {
			return nil, err
		}
		s.first = ds
	}
	return s.first, nil
}

func TestSweepNeverRedeliversTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := e.history()
	gh := &stale{Deliveries: e.app}
	since := e.now.Add(-6 * time.Hour)
	if _, err := e.sweeper(t, gh).Sweep(context.Background(), since); err != nil {
		t.Fatal(err)
	}
	res, err := e.sweeper(t, gh).Sweep(context.Background(), since)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]Outcome{"g-503": AlreadyRedelivered, "g-timeout": AlreadyRedelivered, "g-401": AlreadyRedelivered}, outcomes(res)); diff != "" {
		t.Errorf("second sweep on the same listing (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, e.f.Redeliveries()); diff != "" {
		t.Errorf("redelivered ids (-want +got):\n%s", diff)
	}
}

// barrier lets no listing return until n sweeps have listed, so they all
// see the same failures and race to redeliver them.
type barrier struct {
	Deliveries
	wg *sync.WaitGroup
}

func (b barrier) ListHookDeliveries(ctx context.Context, since time.Time) ([]ghapp.HookDelivery, error) {
	ds, err := b.Deliveries.ListHookDeliveries(ctx, since)
	b.wg.Done()
	b.wg.Wait()
	return ds, err
}

func TestSweepersRacing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := e.history()
	const n = 4
	var wg sync.WaitGroup
	wg.Add(n)
	results := make([]Result, n)
	errs := make([]error, n)
	var done sync.WaitGroup
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			results[i], errs[i] = e.sweeper(t, barrier{Deliveries: e.app, wg: &wg}).Sweep(context.Background(), e.now.Add(-6*time.Hour))
		}()
	}
	done.Wait()
	count := map[string]map[Outcome]int{}
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("sweeper %d: %v", i, errs[i])
		}
		for _, rep := range r.Reports {
			if count[rep.GUID] == nil {
				count[rep.GUID] = map[Outcome]int{}
			}
			count[rep.GUID][rep.Outcome]++
		}
	}
	wantCount := map[Outcome]int{Redelivered: 1, AlreadyRedelivered: n - 1}
	if diff := cmp.Diff(map[string]map[Outcome]int{"g-503": wantCount, "g-timeout": wantCount, "g-401": wantCount}, count); diff != "" {
		t.Errorf("outcomes per delivery over %d racing sweepers (-want +got):\n%s", n, diff)
	}
	got := e.f.Redeliveries()
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("redelivered ids (-want +got):\n%s", diff)
	}
}

func TestSweepRedeliveryFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		status    int
		outcome   Outcome
		nextSweep Outcome // what a sweep on the same listing does next
	}{
		{"server error", http.StatusBadGateway, Errored, Redelivered},
		{"refused", http.StatusUnprocessableEntity, Refused, AlreadyRedelivered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			id := e.add("g-1", 503, time.Hour)
			e.f.FailNext("POST", "/app/hook/deliveries/*/attempts", tt.status, nil)
			gh := &stale{Deliveries: e.app}
			since := e.now.Add(-2 * time.Hour)
			res, err := e.sweeper(t, gh).Sweep(context.Background(), since)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Reports) != 1 || res.Reports[0].Outcome != tt.outcome || ghapp.HTTPStatus(res.Reports[0].Err) != tt.status {
				t.Fatalf("reports = %+v, want one %s with GitHub's %d", res.Reports, tt.outcome, tt.status)
			}
			res, err = e.sweeper(t, gh).Sweep(context.Background(), since)
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomes(res)["g-1"]; got != tt.nextSweep {
				t.Errorf("next sweep: %s, want %s", got, tt.nextSweep)
			}
			wantIDs := []int64(nil)
			if tt.nextSweep == Redelivered {
				wantIDs = []int64{id}
			}
			if diff := cmp.Diff(wantIDs, e.f.Redeliveries()); diff != "" {
				t.Errorf("redelivered ids (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSweepRedisDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.history()
	s := e.sweeper(t, e.app)
	e.rdb.Close()
	if _, err := s.Sweep(context.Background(), e.now.Add(-6*time.Hour)); err == nil || !strings.Contains(err.Error(), "claim delivery g-503") {
		t.Errorf("Sweep without Redis = %v, want an error claiming g-503", err)
	}
	if got := e.f.Redeliveries(); len(got) != 0 {
		t.Errorf("redelivered %v without a claim", got)
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.history()
	failed, listed, err := List(context.Background(), e.app, e.now.Add(-6*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var guids []string
	for _, f := range failed {
		guids = append(guids, f.GUID)
	}
	if diff := cmp.Diff([]string{"g-503", "g-timeout", "g-401"}, guids); diff != "" || listed != 7 {
		t.Errorf("List = %d listed, failed (-want +got):\n%s", listed, diff)
	}
	if len(e.f.Redeliveries()) != 0 {
		t.Errorf("List redelivered something")
	}
}

func TestFailedOf(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	d := func(id int64, guid string, code int, min int) ghapp.HookDelivery {
		return ghapp.HookDelivery{ID: id, GUID: guid, StatusCode: code, DeliveredAt: at.Add(time.Duration(min) * time.Minute)}
	}
	tests := []struct {
		name       string
		in         []ghapp.HookDelivery
		wantLatest []int64
		wantLastOK time.Time
	}{
		{"none", nil, nil, time.Time{}},
		{"a success after failures", []ghapp.HookDelivery{d(3, "a", 200, 3), d(2, "a", 500, 2), d(1, "a", 502, 1)}, nil, at.Add(3 * time.Minute)},
		{"a redirect and a client error fail", []ghapp.HookDelivery{d(2, "b", 400, 2), d(1, "a", 302, 1)}, []int64{1, 2}, time.Time{}},
		{"the newest attempt, same time: higher id", []ghapp.HookDelivery{d(5, "a", 500, 1), d(6, "a", 500, 1)}, []int64{6}, time.Time{}},
		{"oldest first", []ghapp.HookDelivery{d(9, "late", 0, 9), d(2, "early", 0, 2), d(4, "ok", 202, 5)}, []int64{2, 9}, at.Add(5 * time.Minute)},
		{"no guid: by id", []ghapp.HookDelivery{d(1, "", 500, 1), d(2, "", 500, 2)}, []int64{1, 2}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failed, lastOK := failedOf(tt.in)
			var ids []int64
			for _, f := range failed {
				ids = append(ids, f.Latest.ID)
			}
			if diff := cmp.Diff(tt.wantLatest, ids); diff != "" {
				t.Errorf("failed deliveries' latest ids (-want +got):\n%s", diff)
			}
			if !lastOK.Equal(tt.wantLastOK) {
				t.Errorf("last success = %v, want %v", lastOK, tt.wantLastOK)
			}
		})
	}
}
