package budget

import (
	"context"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfix/agentfix/internal/redistest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// clock is a settable clock for the Budget.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(s string) *clock {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &clock{t: t}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// client returns a client of a fresh redis-server for t.
func client(t *testing.T, srv *redistest.Server) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func newBudget(t *testing.T, rdb redis.UniversalClient, l Limits, c *clock, reg prometheus.Registerer) *Budget {
	t.Helper()
	b, err := New(rdb, l, Options{Now: c.Now, Registerer: reg})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

var (
	ctx    = context.Background()
	widget = Scope{Installation: 7, Repo: "acme/widget", Job: "fix:acme/widget#1"}
	gadget = Scope{Installation: 7, Repo: "acme/gadget", Job: "fix:acme/gadget#2"}
	other  = Scope{Installation: 8, Repo: "zeta/widget", Job: "fix:zeta/widget#1"}
)

func job(s Scope, id string) Scope { s.Job = id; return s }

// approx compares dollars to the micro-dollar.
var approx = cmpopts.EquateApprox(0, 1e-6)

func TestReserveEveryScope(t *testing.T) {
	t.Parallel()
	limits := Limits{JobUSD: 1, RepoDailyUSD: 2, InstallationDailyUSD: 3}
	type step struct {
		scope    Scope
		estimate float64
		actual   float64
		wantKind Kind // the scope that refuses the reservation; "" when granted
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"job limit", []step{
			{widget, 0.5, 0.4, ""},
			{widget, 0.6, 0.6, ""},
			{widget, 0.1, 0, KindJob}, // 1.0 spent: used up
		}},
		{"job limit with room left but not enough", []step{
			{widget, 0.7, 0.7, ""},
			{widget, 0.4, 0, KindJob}, // 0.7 + 0.4 > 1
			{widget, 0.3, 0.3, ""},    // exactly the limit is allowed
		}},
		{"repository limit across jobs", []step{
			{job(widget, "a"), 0.9, 0.9, ""},
			{job(widget, "b"), 0.9, 0.9, ""},
			{job(widget, "c"), 0.3, 0, KindRepo},
			{job(gadget, "c"), 0.3, 0.3, ""}, // another repository has its own
		}},
		{"installation limit across repositories", []step{
			{job(widget, "a"), 1, 1, ""},
			{job(widget, "b"), 1, 1, ""},
			{job(gadget, "c"), 0.8, 0.8, ""},
			{job(gadget, "d"), 0.3, 0, KindInstallation},
			{job(other, "e"), 0.3, 0.3, ""}, // another installation has its own
		}},
		{"repository names are case-insensitive", []step{
			{job(widget, "a"), 1, 1, ""},
			{Scope{Installation: 7, Repo: "ACME/Widget", Job: "b"}, 1, 1, ""},
			{Scope{Installation: 7, Repo: "Acme/widget", Job: "c"}, 0.1, 0, KindRepo},
		}},
		{"job limit lowered by the scope", []step{
			{Scope{Installation: 7, Repo: "acme/widget", Job: "low", JobLimit: Amount{USD: 0.25}}, 0.2, 0.2, ""},
			{Scope{Installation: 7, Repo: "acme/widget", Job: "low", JobLimit: Amount{USD: 0.25}}, 0.1, 0, KindJob},
		}},
		{"a scope job limit cannot raise the Budget's", []step{
			{Scope{Installation: 7, Repo: "acme/widget", Job: "high", JobLimit: Amount{USD: 50}}, 1, 1, ""},
			{Scope{Installation: 7, Repo: "acme/widget", Job: "high", JobLimit: Amount{USD: 50}}, 0.1, 0, KindJob},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBudget(t, client(t, redistest.Start(t)), limits, newClock("2030-05-06T10:00:00Z"), nil)
			for i, st := range tt.steps {
				r, err := b.Reserve(ctx, st.scope, Amount{USD: st.estimate})
				if st.wantKind != "" {
					var e *ExceededError
					if !errors.As(err, &e) || e.Kind != st.wantKind {
						t.Fatalf("step %d: Reserve(%+v, %v) = %v, %v; want an *ExceededError of %s", i, st.scope, st.estimate, r, err, st.wantKind)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d: Reserve(%+v, %v): %v", i, st.scope, st.estimate, err)
				}
				if _, err := r.Settle(ctx, Amount{USD: st.actual}); err != nil {
					t.Fatalf("step %d: Settle: %v", i, err)
				}
			}
		})
	}
}

func TestSpent(t *testing.T) {
	t.Parallel()
	c := newClock("2030-05-06T10:00:00Z")
	b := newBudget(t, client(t, redistest.Start(t)), Limits{JobUSD: 1, RepoDailyUSD: 2, InstallationDailyUSD: 3, RepoDailyTokens: 5000}, c, nil)
	r1, err := b.Reserve(ctx, widget, Amount{USD: 0.5, Tokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r1.Settle(ctx, Amount{USD: 0.123456, Tokens: 900}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reserve(ctx, job(gadget, "held"), Amount{USD: 0.2, Tokens: 300}); err != nil {
		t.Fatal(err)
	}
	reset := time.Date(2030, 5, 7, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		scope Scope
		want  []Usage
	}{
		{"with the job", widget, []Usage{
			{Kind: KindJob, Spent: Amount{0.123456, 900}, Limit: Amount{USD: 1}},
			{Kind: KindRepo, Spent: Amount{0.123456, 900}, Limit: Amount{2, 5000}, ResetAt: reset},
			{Kind: KindInstallation, Spent: Amount{0.123456, 900}, Held: Amount{0.2, 300}, Limit: Amount{USD: 3}, ResetAt: reset},
		}},
		{"without a job", Scope{Installation: 7, Repo: "acme/gadget"}, []Usage{
			{Kind: KindRepo, Held: Amount{0.2, 300}, Limit: Amount{2, 5000}, ResetAt: reset},
			{Kind: KindInstallation, Spent: Amount{0.123456, 900}, Held: Amount{0.2, 300}, Limit: Amount{USD: 3}, ResetAt: reset},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := b.Spent(ctx, tt.scope)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("Spent mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	c := newClock("2030-05-06T19:00:00Z")
	b := newBudget(t, client(t, redistest.Start(t)), Limits{JobUSD: 3, RepoDailyUSD: 2, InstallationDailyUSD: 10}, c, nil)
	repo := Scope{Installation: 7, Repo: "acme/widget"}
	if err := b.Check(ctx, repo, Amount{USD: 0.5}); err != nil {
		t.Fatalf("Check of a fresh budget: %v", err)
	}
	r, err := b.Reserve(ctx, widget, Amount{USD: 1.8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Settle(ctx, Amount{USD: 1.7}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		scope    Scope
		need     Amount
		wantKind Kind
	}{
		{"room for nothing asked", repo, Amount{}, ""},
		{"room for what is asked", repo, Amount{USD: 0.3}, ""},
		{"not enough room", repo, Amount{USD: 0.31}, KindRepo},
		{"job checked when given", job(repo, "fix:acme/widget#1"), Amount{USD: 0.1}, ""},
		{"another repository", Scope{Installation: 7, Repo: "acme/gadget"}, Amount{USD: 1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := b.Check(ctx, tt.scope, tt.need)
			if tt.wantKind == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			var e *ExceededError
			if !errors.As(err, &e) || e.Kind != tt.wantKind {
				t.Fatalf("Check = %v, want an *ExceededError of %s", err, tt.wantKind)
			}
		})
	}
	r, err = b.Reserve(ctx, widget, Amount{USD: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Settle(ctx, Amount{USD: 0.3}); err != nil {
		t.Fatal(err)
	}
	err = b.Check(ctx, repo, Amount{})
	var e *ExceededError
	if !errors.As(err, &e) {
		t.Fatalf("Check of a used up budget = %v, want an *ExceededError", err)
	}
	want := &ExceededError{Kind: KindRepo, Limit: 2, Spent: 2, ResetAt: time.Date(2030, 5, 7, 0, 0, 0, 0, time.UTC), Now: c.Now()}
	if diff := cmp.Diff(want, e, approx); diff != "" {
		t.Errorf("ExceededError mismatch (-want +got):\n%s", diff)
	}
}

func TestTokenBudget(t *testing.T) {
	t.Parallel()
	// An unpriced model: every call costs 0 USD, and tokens are counted.
	c := newClock("2030-05-06T10:00:00Z")
	b := newBudget(t, client(t, redistest.Start(t)), Limits{JobUSD: 3, RepoDailyUSD: 20, InstallationDailyUSD: 100, JobTokens: 50_000, RepoDailyTokens: 60_000}, c, nil)
	for i := range 2 {
		r, err := b.Reserve(ctx, widget, Amount{Tokens: 20_000})
		if err != nil {
			t.Fatalf("reservation %d: %v", i, err)
		}
		if _, err := r.Settle(ctx, Amount{Tokens: 20_000}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := b.Reserve(ctx, widget, Amount{Tokens: 20_000})
	var e *ExceededError
	if !errors.As(err, &e) || e.Kind != KindJob || !e.Tokens {
		t.Fatalf("third reservation = %v, want a job token *ExceededError", err)
	}
	r, err := b.Reserve(ctx, job(widget, "second"), Amount{Tokens: 20_000})
	if err != nil {
		t.Fatalf("second job: %v", err)
	}
	if _, err := r.Settle(ctx, Amount{Tokens: 19_000}); err != nil {
		t.Fatal(err)
	}
	_, err = b.Reserve(ctx, job(widget, "third"), Amount{Tokens: 1_001})
	if !errors.As(err, &e) || e.Kind != KindRepo || !e.Tokens || e.Spent != 59_000 || e.Limit != 60_000 {
		t.Fatalf("reservation over the repository's tokens = %v, want a repository token *ExceededError at 59000 of 60000", err)
	}
	if _, err := b.Reserve(ctx, job(widget, "third"), Amount{Tokens: 1_000}); err != nil {
		t.Errorf("reservation of the last 1000 tokens: %v", err)
	}
}

func TestDayRollover(t *testing.T) {
	t.Parallel()
	c := newClock("2030-05-06T23:59:30Z")
	rdb := client(t, redistest.Start(t))
	b := newBudget(t, rdb, Limits{RepoDailyUSD: 1, InstallationDailyUSD: 5}, c, nil)
	repo := Scope{Installation: 7, Repo: "acme/widget"}
	r, err := b.Reserve(ctx, job(repo, "late"), Amount{USD: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Settle(ctx, Amount{USD: 1}); err != nil {
		t.Fatal(err)
	}
	err = b.Check(ctx, repo, Amount{})
	var e *ExceededError
	if !errors.As(err, &e) {
		t.Fatalf("Check at 23:59:30 = %v, want an *ExceededError", err)
	}
	if want := time.Date(2030, 5, 7, 0, 0, 0, 0, time.UTC); !e.ResetAt.Equal(want) {
		t.Errorf("ResetAt = %s, want %s", e.ResetAt, want)
	}

	// A reservation made before midnight and settled after it is charged
	// to the day it was made on: that is where its room was held.
	held, err := b.Reserve(ctx, job(Scope{Installation: 7, Repo: "acme/gadget"}, "straddles"), Amount{USD: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(31 * time.Second) // 00:00:01 the next day
	if err := b.Check(ctx, repo, Amount{USD: 1}); err != nil {
		t.Fatalf("Check after midnight = %v, want nil", err)
	}
	if _, err := held.Settle(ctx, Amount{USD: 0.5}); err != nil {
		t.Fatal(err)
	}
	today, err := b.Spent(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range today {
		if u.Spent.USD != 0 || u.Held.USD != 0 {
			t.Errorf("%s after midnight: spent %v, held %v; want a fresh day", u.Kind, u.Spent.USD, u.Held.USD)
		}
	}
	yesterday := "agentfix:budget:{i7}:inst:2030-05-06"
	if got, err := rdb.HGet(ctx, yesterday, "u").Int64(); err != nil || got != 1_500_000 {
		t.Errorf("yesterday's installation spend = %d, %v; want 1500000 micro-dollars", got, err)
	}

	// Keys of a day expire 48 h after the day began; they were written
	// 30 s before its end, so at most 24 h 30 s remain.
	for _, key := range []string{yesterday, "agentfix:budget:{i7}:repo:acme/widget:2030-05-06"} {
		ttl, err := rdb.TTL(ctx, key).Result()
		if err != nil || ttl <= 0 || ttl > 24*time.Hour+30*time.Second {
			t.Errorf("TTL of %s = %s, %v; want in (0, 24h0m30s]", key, ttl, err)
		}
	}
	ttl, err := rdb.TTL(ctx, "agentfix:budget:{i7}:job:late").Result()
	if err != nil || ttl <= 0 || ttl > 48*time.Hour {
		t.Errorf("TTL of the job key = %s, %v; want in (0, 48h]", ttl, err)
	}
}

func TestReservationExpiry(t *testing.T) {
	t.Parallel()
	c := newClock("2030-05-06T10:00:00Z")
	b, err := New(client(t, redistest.Start(t)), Limits{RepoDailyUSD: 1}, Options{Now: c.Now, ReservationTTL: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	dead, err := b.Reserve(ctx, job(widget, "dead"), Amount{USD: 0.8})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Reserve(ctx, job(widget, "live"), Amount{USD: 0.5})
	var e *ExceededError
	if !errors.As(err, &e) || e.Held != 0.8 {
		t.Fatalf("Reserve while 0.8 is held = %v, want an *ExceededError with 0.8 held", err)
	}
	c.Advance(5 * time.Minute) // the dead worker's reservation expires
	live, err := b.Reserve(ctx, job(widget, "live"), Amount{USD: 0.5})
	if err != nil {
		t.Fatalf("Reserve after the expiry: %v", err)
	}
	// The worker was not dead after all: its late settlement still charges.
	st, err := dead.Settle(ctx, Amount{USD: 0.6})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Expired {
		t.Errorf("Settle of an expired reservation: Expired = false, want true")
	}
	st, err = live.Settle(ctx, Amount{USD: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	if st.Expired {
		t.Errorf("Settle of a live reservation: Expired = true, want false")
	}
	got, err := b.Spent(ctx, Scope{Installation: 7, Repo: "acme/widget"})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Spent.USD != 0.9 || got[0].Held.USD != 0 {
		t.Errorf("repository spent %v held %v, want 0.9 and 0", got[0].Spent.USD, got[0].Held.USD)
	}
}

func TestSettleAndRelease(t *testing.T) {
	t.Parallel()
	c := newClock("2030-05-06T10:00:00Z")
	reg := prometheus.NewRegistry()
	b := newBudget(t, client(t, redistest.Start(t)), Limits{JobUSD: 1}, c, reg)

	r, err := b.Reserve(ctx, widget, Amount{USD: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Settle(ctx, Amount{USD: 0.1}); err == nil {
		t.Errorf("Settle after Release: no error")
	}

	r, err = b.Reserve(ctx, widget, Amount{USD: 0.25, Tokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Settle(ctx, Amount{USD: 0.375, Tokens: 150})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Settlement{Over: Amount{USD: 0.125, Tokens: 50}}, st, approx); diff != "" {
		t.Errorf("Settlement of a call over its estimate mismatch (-want +got):\n%s", diff)
	}
	if _, err := b.Reserve(ctx, widget, Amount{USD: 0.7}); err == nil {
		t.Errorf("Reserve of 0.7 after 0.375 spent of 1: no error")
	}

	for _, kind := range []string{"job", "repo", "installation"} {
		if got := counterValue(t, b.metrics.spentUSD.WithLabelValues(kind)); math.Abs(got-0.375) > 1e-9 {
			t.Errorf("agentfix_budget_spent_usd{scope=%q} = %v, want 0.375", kind, got)
		}
		if got := counterValue(t, b.metrics.spentTokens.WithLabelValues(kind)); got != 150 {
			t.Errorf("agentfix_budget_spent_tokens{scope=%q} = %v, want 150", kind, got)
		}
	}
	if got := counterValue(t, b.metrics.exceeded.WithLabelValues("job")); got != 1 {
		t.Errorf("agentfix_budget_exceeded_total{scope=\"job\"} = %v, want 1", got)
	}
	// A second Budget on the same registry shares the counters.
	b2 := newBudget(t, client(t, redistest.Start(t)), Limits{}, c, reg)
	if b2.metrics.spentUSD != b.metrics.spentUSD {
		t.Errorf("a second Budget on one registry has counters of its own")
	}
	names, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range names {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "scope" {
					t.Errorf("metric %s has label %s; only scope is allowed", mf.GetName(), l.GetName())
				}
			}
		}
	}
}

func TestSettleAfterCancel(t *testing.T) {
	t.Parallel()
	b := newBudget(t, client(t, redistest.Start(t)), Limits{JobUSD: 1}, newClock("2030-05-06T10:00:00Z"), nil)
	r, err := b.Reserve(ctx, widget, Amount{USD: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel() // the job was stopped during the call
	if _, err := r.Settle(cancelled, Amount{USD: 0.4}); err != nil {
		t.Fatalf("Settle with a cancelled context: %v", err)
	}
	got, err := b.Spent(ctx, widget)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Spent.USD != 0.4 || got[0].Held.USD != 0 {
		t.Errorf("job spent %v held %v, want 0.4 and 0", got[0].Spent.USD, got[0].Held.USD)
	}
}

func TestSettleRetryChargesOnce(t *testing.T) {
	t.Parallel()
	b := newBudget(t, client(t, redistest.Start(t)), Limits{JobUSD: 1}, newClock("2030-05-06T10:00:00Z"), nil)
	r, err := b.Reserve(ctx, widget, Amount{USD: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Settle(ctx, Amount{USD: 0.4}); err != nil {
		t.Fatal(err)
	}
	// The first reply was lost: the worker does not know it settled.
	retry := *r
	retry.settled = false
	if _, err := retry.Settle(ctx, Amount{USD: 0.4}); err != nil {
		t.Fatalf("retried Settle: %v", err)
	}
	got, err := b.Spent(ctx, widget)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range got {
		if u.Spent.USD != 0.4 {
			t.Errorf("%s spent %v after a retried Settle, want 0.4", u.Kind, u.Spent.USD)
		}
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	rdb := client(t, redistest.Start(t))
	c := newClock("2030-05-06T10:00:00Z")
	b := newBudget(t, rdb, Limits{JobUSD: 1}, c, nil)
	tests := []struct {
		name    string
		call    func() error
		wantErr string
	}{
		{"no installation", func() error { _, err := b.Reserve(ctx, Scope{Repo: "a/b", Job: "j"}, Amount{USD: 1}); return err }, "installation 0 is not an installation id"},
		{"bad repository", func() error {
			_, err := b.Reserve(ctx, Scope{Installation: 1, Repo: "a", Job: "j"}, Amount{USD: 1})
			return err
		}, `repository "a" is not owner/name`},
		{"no job", func() error {
			_, err := b.Reserve(ctx, Scope{Installation: 1, Repo: "a/b"}, Amount{USD: 1})
			return err
		}, "a reservation needs a job id"},
		{"negative estimate", func() error { _, err := b.Reserve(ctx, widget, Amount{USD: -1}); return err }, "must not be negative"},
		{"negative tokens", func() error { _, err := b.Reserve(ctx, widget, Amount{Tokens: -1}); return err }, "must not be negative"},
		{"NaN need", func() error { return b.Check(ctx, widget, Amount{USD: math.NaN()}) }, "must not be negative"},
		{"negative job limit", func() error {
			_, err := b.Reserve(ctx, Scope{Installation: 1, Repo: "a/b", Job: "j", JobLimit: Amount{USD: -2}}, Amount{USD: 1})
			return err
		}, "job limit"},
		{"negative limit", func() error { _, err := New(rdb, Limits{RepoDailyUSD: -1}, Options{}); return err }, "budget limit repository daily USD is -1"},
		{"braces in the prefix", func() error { _, err := New(rdb, Limits{}, Options{Prefix: "x{y}"}); return err }, "may not contain braces"},
		{"no client", func() error { _, err := New(nil, Limits{}, Options{}); return err }, "needs a Redis client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRedisDown(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	b := newBudget(t, rdb, Limits{JobUSD: 1}, newClock("2030-05-06T10:00:00Z"), nil)
	r, err := b.Reserve(ctx, widget, Amount{USD: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if _, err := b.Reserve(ctx, widget, Amount{USD: 0.1}); err == nil {
		t.Errorf("Reserve with Redis down: no error")
	}
	var e *ExceededError
	if err := b.Check(ctx, widget, Amount{}); err == nil || errors.As(err, &e) {
		t.Errorf("Check with Redis down = %v, want an error that is not *ExceededError", err)
	}
	if _, err := r.Settle(ctx, Amount{USD: 0.1}); err == nil {
		t.Errorf("Settle with Redis down: no error")
	}
}

func TestExceededMessage(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 5, 6, 18, 48, 0, 0, time.UTC)
	midnight := time.Date(2030, 5, 7, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		err  *ExceededError
	}{
		{"repository used up", &ExceededError{Kind: KindRepo, Limit: 20, Spent: 20.13, ResetAt: midnight, Now: now}},
		{"repository nearly used up with calls running", &ExceededError{Kind: KindRepo, Limit: 20, Spent: 18.5, Held: 1.2, Need: 0.5, ResetAt: midnight, Now: time.Date(2030, 5, 6, 19, 0, 0, 0, time.UTC)}},
		{"installation", &ExceededError{Kind: KindInstallation, Limit: 100, Spent: 100, ResetAt: midnight, Now: time.Date(2030, 5, 6, 23, 20, 0, 0, time.UTC)}},
		{"installation seconds before midnight", &ExceededError{Kind: KindInstallation, Limit: 100, Spent: 99.999, Need: 0.004, ResetAt: midnight, Now: time.Date(2030, 5, 6, 23, 59, 45, 0, time.UTC)}},
		{"job", &ExceededError{Kind: KindJob, Limit: 3, Spent: 2.9, Need: 0.25, Now: now}},
		{"repository tokens", &ExceededError{Kind: KindRepo, Tokens: true, Limit: 2_000_000, Spent: 1_999_000, Need: 40_000, ResetAt: midnight, Now: now}},
	}
	var b strings.Builder
	for _, tt := range tests {
		b.WriteString("== " + tt.name + "\n" + tt.err.Message() + "\n" + tt.err.Error() + "\n\n")
	}
	// One from a real refusal, so the fields Reserve fills are covered.
	c := newClock("2030-05-06T18:48:00Z")
	bu := newBudget(t, client(t, redistest.Start(t)), Limits{RepoDailyUSD: 20}, c, nil)
	r, err := bu.Reserve(ctx, widget, Amount{USD: 19.75})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Settle(ctx, Amount{USD: 19.75}); err != nil {
		t.Fatal(err)
	}
	_, err = bu.Reserve(ctx, widget, Amount{USD: 0.5})
	var e *ExceededError
	if !errors.As(err, &e) {
		t.Fatalf("Reserve over the limit = %v, want an *ExceededError", err)
	}
	b.WriteString("== from Reserve\n" + e.Message() + "\n" + e.Error() + "\n")
	golden(t, "exceeded.golden", b.String())
}

// counterValue reads a counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}
