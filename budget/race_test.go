package budget

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/agentfix/agentfix/internal/redistest"
)

// TestRaceNeverOverspends runs many workers on two Budgets (two processes'
// worth of clients) sharing one Redis; each worker reserves, "calls the
// model" and settles until it is refused. Whatever the interleaving, no
// scope is charged beyond its limit, and nothing charged is lost.
func TestRaceNeverOverspends(t *testing.T) {
	t.Parallel()
	const (
		workersPerBudget = 6
		estimate         = 70_000 // micro-dollars per call
	)
	tests := []struct {
		name   string
		limits Limits
		// scope returns the scope of worker w.
		scope func(w int) Scope
		// exact: every call costs its estimate, so the binding limit
		// must also be nearly reached (within one estimate).
		exact bool
		// binding is the kind whose limit the workers run into.
		binding Kind
	}{
		{
			name:    "one job",
			limits:  Limits{JobUSD: 2, RepoDailyUSD: 20, InstallationDailyUSD: 100},
			scope:   func(int) Scope { return widget },
			exact:   true,
			binding: KindJob,
		},
		{
			name:    "one repository, a job per worker",
			limits:  Limits{JobUSD: 3, RepoDailyUSD: 4, InstallationDailyUSD: 100},
			scope:   func(w int) Scope { return job(widget, fmt.Sprintf("job-%d", w)) },
			exact:   true,
			binding: KindRepo,
		},
		{
			name:    "two repositories of one installation, calls cheaper than estimated",
			limits:  Limits{JobUSD: 3, RepoDailyUSD: 4, InstallationDailyUSD: 5},
			scope:   func(w int) Scope { return []Scope{job(widget, fmt.Sprint(w)), job(gadget, fmt.Sprint(w))}[w%2] },
			binding: KindInstallation,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			c := newClock("2030-05-06T10:00:00Z")
			budgets := []*Budget{
				newBudget(t, client(t, srv), tt.limits, c, nil),
				newBudget(t, client(t, srv), tt.limits, c, nil),
			}
			var (
				mu      sync.Mutex
				charged = map[Kind]map[string]int64{} // kind -> account base -> micro-dollars settled
				errs    []error
				wg      sync.WaitGroup
			)
			for w := range 2 * workersPerBudget {
				b := budgets[w%2]
				s := tt.scope(w)
				rng := rand.New(rand.NewPCG(uint64(w), 1))
				wg.Add(1)
				go func() {
					defer wg.Done()
					accts, err := b.accounts(s, c.Now(), true)
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return
					}
					for {
						r, err := b.Reserve(ctx, s, Amount{USD: dollars(estimate)})
						var e *ExceededError
						if errors.As(err, &e) {
							return
						}
						if err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
							return
						}
						actual := int64(estimate)
						if !tt.exact {
							actual = rng.Int64N(estimate + 1)
						}
						if _, err := r.Settle(ctx, Amount{USD: dollars(actual)}); err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
							return
						}
						mu.Lock()
						for _, a := range accts {
							if charged[a.kind] == nil {
								charged[a.kind] = map[string]int64{}
							}
							charged[a.kind][a.base] += actual
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if len(errs) > 0 {
				t.Fatalf("workers failed: %v", errors.Join(errs...))
			}
			rdb := client(t, srv)
			limit := map[Kind]int64{}
			for _, k := range []Kind{KindJob, KindRepo, KindInstallation} {
				limit[k], _ = micros(map[Kind]float64{KindJob: tt.limits.JobUSD, KindRepo: tt.limits.RepoDailyUSD, KindInstallation: tt.limits.InstallationDailyUSD}[k])
			}
			for kind, bases := range charged {
				for base, want := range bases {
					got, err := rdb.HGet(ctx, base, "u").Int64()
					if err != nil {
						t.Fatalf("read %s: %v", base, err)
					}
					if got != want {
						t.Errorf("%s: Redis has %d micro-dollars, the workers settled %d", base, got, want)
					}
					if got > limit[kind] {
						t.Errorf("%s: %d micro-dollars charged, over the %s limit of %d", base, got, kind, limit[kind])
					}
					if held, err := rdb.HLen(ctx, base+":r").Result(); err != nil || held != 0 {
						t.Errorf("%s: %d reservations left, %v; want none", base, held, err)
					}
					if tt.exact && kind == tt.binding && got <= limit[kind]-estimate {
						t.Errorf("%s: workers stopped at %d micro-dollars of %d with calls of %d; the budget was not used", base, got, limit[kind], estimate)
					}
				}
			}
			if len(charged[tt.binding]) == 0 {
				t.Errorf("nothing was charged to a %s scope", tt.binding)
			}
		})
	}
}
