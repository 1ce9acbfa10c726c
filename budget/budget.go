package budget

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentfix/agentfix/config"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Kind is a scope a spend is charged to; its value is the metric label.
type Kind string

// The kinds of scope, in the order they are checked.
const (
	KindJob          Kind = "job"
	KindRepo         Kind = "repo"
	KindInstallation Kind = "installation"
)

// Amount is a spend: dollars, and tokens (input, output and cache).
type Amount struct {
	USD    float64
	Tokens int64
}

// Limits bound the spend of each kind of scope; zero means no limit.
type Limits struct {
	JobUSD               float64
	RepoDailyUSD         float64
	InstallationDailyUSD float64
	// Token limits matter for a model without a price, which costs 0 USD.
	JobTokens               int64
	RepoDailyTokens         int64
	InstallationDailyTokens int64
}

// LimitsFrom returns the operator's limits of a (its per-job cost and daily
// budgets; the configuration has no token limits).
func LimitsFrom(a *config.App) Limits {
	return Limits{JobUSD: a.MaxCostUSD, RepoDailyUSD: a.RepoDailyUSD, InstallationDailyUSD: a.InstallationDailyUSD}
}

// Scope names what a spend is charged to: an installation, one of its
// repositories and, for Reserve, a job.
type Scope struct {
	Installation int64
	// Repo is "owner/name" (case-insensitive).
	Repo string
	// Job identifies one job across its retries, so a retry does not get a
	// fresh budget (e.g. the asynq task id and the delivery id). Optional
	// for Check and Spent.
	Job string
	// JobLimit lowers the job limits of Limits for this job (a repository's
	// max_cost_usd); a zero field keeps the Budget's.
	JobLimit Amount
}

// Options tune a Budget; the zero value is usable.
type Options struct {
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// ReservationTTL is how long a reservation counts when it is never
	// settled (its worker died). It must exceed the longest model call,
	// retries included. Default DefaultReservationTTL.
	ReservationTTL time.Duration
	// Registerer receives the metrics; none when nil.
	Registerer prometheus.Registerer
	// Prefix starts every key; DefaultPrefix when empty.
	Prefix string
}

// Defaults of Options.
const (
	DefaultReservationTTL = 30 * time.Minute
	DefaultPrefix         = "agentfix:budget:"
	// keyTTL is how long keys live: a day's keys expire this long after
	// the day began, a job's this long after its last use.
	keyTTL = 48 * time.Hour
)

// Budget charges model spend against the limits, in Redis. It is safe for
// concurrent use, and any number of Budgets (in any number of processes)
// may share one Redis.
type Budget struct {
	rdb     redis.UniversalClient
	limits  Limits
	now     func() time.Time
	resTTL  time.Duration
	prefix  string
	metrics *metrics
}

// New returns a Budget charging to rdb (which must run with noeviction).
func New(rdb redis.UniversalClient, limits Limits, opts Options) (*Budget, error) {
	var errs []error
	for _, l := range []struct {
		name string
		v    float64
	}{
		{"job USD", limits.JobUSD}, {"repository daily USD", limits.RepoDailyUSD}, {"installation daily USD", limits.InstallationDailyUSD},
		{"job tokens", float64(limits.JobTokens)}, {"repository daily tokens", float64(limits.RepoDailyTokens)}, {"installation daily tokens", float64(limits.InstallationDailyTokens)},
	} {
		if l.v < 0 || math.IsNaN(l.v) || math.IsInf(l.v, 0) {
			errs = append(errs, fmt.Errorf("budget limit %s is %v; it must be 0 (none) or more", l.name, l.v))
		}
	}
	if opts.ReservationTTL < 0 {
		errs = append(errs, fmt.Errorf("budget reservation TTL %s is negative", opts.ReservationTTL))
	}
	if strings.ContainsAny(opts.Prefix, "{}") {
		errs = append(errs, fmt.Errorf("budget key prefix %q may not contain braces (they select the cluster hash slot)", opts.Prefix))
	}
	if rdb == nil {
		errs = append(errs, errors.New("budget needs a Redis client"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	b := &Budget{rdb: rdb, limits: limits, now: opts.Now, resTTL: opts.ReservationTTL, prefix: opts.Prefix, metrics: m}
	if b.now == nil {
		b.now = time.Now
	}
	if b.resTTL == 0 {
		b.resTTL = DefaultReservationTTL
	}
	if b.prefix == "" {
		b.prefix = DefaultPrefix
	}
	return b, nil
}

// Limits returns the Budget's limits, e.g. for the help reply.
func (b *Budget) Limits() Limits { return b.limits }

// account is one scope's keys and limits at a moment.
type account struct {
	kind Kind
	base string // hash of what was spent; base+":r" and base+":x" hold the reservations
	ttl  time.Duration
	// limit in micro-dollars and tokens; zero means none
	limitMicros, limitTokens int64
	resetAt                  time.Time // zero for a job
}

var repoFullName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9_.-]+$`)

// accounts returns the scopes of s at now: the job's (when s.Job is set or
// needJob), the repository's and the installation's.
func (b *Budget) accounts(s Scope, now time.Time, needJob bool) ([]account, error) {
	var errs []error
	if s.Installation <= 0 {
		errs = append(errs, fmt.Errorf("installation %d is not an installation id", s.Installation))
	}
	if !repoFullName.MatchString(s.Repo) {
		errs = append(errs, fmt.Errorf("repository %q is not owner/name", s.Repo))
	}
	if needJob && s.Job == "" {
		errs = append(errs, errors.New("a reservation needs a job id"))
	}
	if len(s.Job) > 512 {
		errs = append(errs, fmt.Errorf("job id of %d bytes is longer than 512", len(s.Job)))
	}
	if _, err := micros(s.JobLimit.USD); err != nil || s.JobLimit.Tokens < 0 {
		errs = append(errs, fmt.Errorf("job limit %+v must not be negative", s.JobLimit))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("budget scope: %w", errors.Join(errs...))
	}
	now = now.UTC()
	day := now.Format(time.DateOnly)
	dayStart := now.Truncate(24 * time.Hour)
	reset := dayStart.Add(24 * time.Hour)
	dayTTL := dayStart.Add(keyTTL).Sub(now)
	tag := b.tag(s.Installation)
	var accts []account
	if s.Job != "" {
		usd, tokens := lower(b.limits.JobUSD, s.JobLimit.USD), lowerInt(b.limits.JobTokens, s.JobLimit.Tokens)
		lu, _ := micros(usd)
		accts = append(accts, account{kind: KindJob, base: tag + "job:" + s.Job, ttl: keyTTL, limitMicros: lu, limitTokens: tokens})
	}
	ru, _ := micros(b.limits.RepoDailyUSD)
	iu, _ := micros(b.limits.InstallationDailyUSD)
	accts = append(accts,
		account{kind: KindRepo, base: tag + "repo:" + strings.ToLower(s.Repo) + ":" + day, ttl: dayTTL, limitMicros: ru, limitTokens: b.limits.RepoDailyTokens, resetAt: reset},
		account{kind: KindInstallation, base: tag + "inst:" + day, ttl: dayTTL, limitMicros: iu, limitTokens: b.limits.InstallationDailyTokens, resetAt: reset},
	)
	return accts, nil
}

// tag starts the keys of an installation: its braces put them all in one
// Redis Cluster hash slot, so one script may use them together.
func (b *Budget) tag(installation int64) string {
	return b.prefix + "{i" + strconv.FormatInt(installation, 10) + "}:"
}

// keys lists the three keys of each account, in order.
func keys(accts []account) []string {
	out := make([]string, 0, 3*len(accts))
	for _, a := range accts {
		out = append(out, a.base, a.base+":r", a.base+":x")
	}
	return out
}

// micros converts dollars to micro-dollars, rounding to the nearest.
func micros(usd float64) (int64, error) {
	if usd < 0 || math.IsNaN(usd) || math.IsInf(usd, 0) || usd > 1e9 {
		return 0, fmt.Errorf("amount %v USD is not between 0 and 1e9", usd)
	}
	return int64(math.Round(usd * 1e6)), nil
}

func dollars(m int64) float64 { return float64(m) / 1e6 }

// lower returns the lower of two limits where zero means none.
func lower(a, b float64) float64 {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

func lowerInt(a, b int64) int64 {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
