package redeliver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
)

// Window is how long GitHub keeps a delivery listed and redeliverable.
const Window = 72 * time.Hour

// claimTTL is how long a redelivered GUID stays claimed: longer than
// Window, so a GUID is redelivered at most once while GitHub lists it.
const claimTTL = Window + 24*time.Hour

// releaseTimeout bounds the release of a claim or lock after the sweep's
// context ended.
const releaseTimeout = 5 * time.Second

// Outcome is what a sweep did with one failed delivery.
type Outcome string

// Outcomes of a failed delivery.
const (
	// Redelivered: GitHub accepted the request to redeliver it.
	Redelivered Outcome = "redelivered"
	// AlreadyRedelivered: a sweep redelivered it before (its claim is in
	// Redis); it is not asked for again.
	AlreadyRedelivered Outcome = "already redelivered"
	// Held: no delivery succeeded since it failed, so the edge may still be
	// down; the periodic sweep waits (only Run holds deliveries back).
	Held Outcome = "held"
	// Refused: GitHub refused the request (4xx, e.g. a delivery too old);
	// it is not asked for again.
	Refused Outcome = "refused"
	// Errored: the request failed (5xx, rate limit, connection); the next
	// sweep asks again.
	Errored Outcome = "error"
	// WouldRedeliver: a dry run (DryRun) found it failed and asked for
	// nothing.
	WouldRedeliver Outcome = "would redeliver"
)

// Report is one failed delivery and what the sweep did with it.
type Report struct {
	Failed
	Outcome Outcome
	// Err is GitHub's or Redis's error for Refused and Errored.
	Err error
}

// Result is what one sweep found and did.
type Result struct {
	// Since is the start of the time the sweep looked at.
	Since time.Time
	// Listed counts the deliveries GitHub listed.
	Listed int
	// Reports has one entry per failed delivery, oldest first.
	Reports []Report
}

// Count returns how many failed deliveries ended with o.
func (r Result) Count(o Outcome) int {
	n := 0
	for _, rep := range r.Reports {
		if rep.Outcome == o {
			n++
		}
	}
	return n
}

// Options configure a Sweeper. GitHub, Redis and AppID are required.
type Options struct {
	// GitHub lists and redelivers the App's deliveries.
	GitHub Deliveries
	// Redis holds the claims of redelivered GUIDs, the leader lock and the
	// time of the last periodic sweep, under keys that name AppID.
	Redis redis.UniversalClient
	// AppID is the GitHub App's id.
	AppID int64
	// Logger receives what sweeps do (default: discarded).
	Logger *slog.Logger
	// LockTTL is how long the leader lock outlives a worker that stopped
	// renewing it (default 1m).
	LockTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Sweeper redelivers the App's failed webhook deliveries. Its methods are
// safe for concurrent use, and any number of Sweepers may share a Redis.
type Sweeper struct {
	gh      Deliveries
	rdb     redis.UniversalClient
	appID   int64
	log     *slog.Logger
	lockTTL time.Duration
	now     func() time.Time
}

// New returns a Sweeper.
func New(o Options) (*Sweeper, error) {
	if o.GitHub == nil || o.Redis == nil || o.AppID <= 0 {
		return nil, errors.New("redeliver: GitHub, Redis and a positive AppID are required")
	}
	s := &Sweeper{gh: o.GitHub, rdb: o.Redis, appID: o.AppID, log: o.Logger, lockTTL: o.LockTTL, now: o.Now}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.lockTTL <= 0 {
		s.lockTTL = time.Minute
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// key returns the Redis key of name for this App.
func (s *Sweeper) key(name string) string {
	return "agentfix:redeliver:" + strconv.FormatInt(s.appID, 10) + ":" + name
}

// Sweep asks GitHub to redeliver, once, each delivery made at or after
// since that failed. It returns what it did, and an error when the listing
// or Redis failed or ctx ended (with the reports made so far); a failed
// request for one delivery is a report, not an error.
func (s *Sweeper) Sweep(ctx context.Context, since time.Time) (Result, error) {
	return s.sweep(ctx, since, false)
}

// sweep is Sweep; hold holds back deliveries no success followed.
func (s *Sweeper) sweep(ctx context.Context, since time.Time, hold bool) (Result, error) {
	res := Result{Since: since}
	ds, err := s.gh.ListHookDeliveries(ctx, since)
	if err != nil {
		return res, fmt.Errorf("list webhook deliveries since %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	res.Listed = len(ds)
	failed, lastOK := failedOf(ds)
	token, err := newToken()
	if err != nil {
		return res, err
	}
	for _, f := range failed {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if hold && !lastOK.After(f.Latest.DeliveredAt) {
			res.Reports = append(res.Reports, Report{Failed: f, Outcome: Held})
			continue
		}
		rep, err := s.redeliver(ctx, f, token)
		if err != nil {
			return res, err
		}
		res.Reports = append(res.Reports, rep)
	}
	return res, nil
}

// redeliver claims f's GUID and asks GitHub to redeliver it. The error is
// Redis's or the context's; GitHub's is in the report.
func (s *Sweeper) redeliver(ctx context.Context, f Failed, token string) (Report, error) {
	log := s.log.With(logattr.DeliveryID, f.GUID, logattr.HookDeliveryID, f.Latest.ID, logattr.Event, f.Latest.Event)
	claim := s.key("done:" + f.GUID)
	if f.GUID == "" {
		claim = s.key("done:id:" + strconv.FormatInt(f.Latest.ID, 10))
	}
	claimed, err := s.rdb.SetNX(ctx, claim, token, claimTTL).Result()
	if err != nil {
		return Report{}, fmt.Errorf("claim delivery %s: %w", f.GUID, err)
	}
	if !claimed {
		log.Debug("delivery redelivered before")
		return Report{Failed: f, Outcome: AlreadyRedelivered}, nil
	}
	err = s.gh.RedeliverHookDelivery(ctx, f.Latest.ID)
	if err == nil {
		log.Info("failed delivery redelivered", logattr.Status, f.Latest.StatusCode)
		return Report{Failed: f, Outcome: Redelivered}, nil
	}
	if st := ghapp.HTTPStatus(err); st >= 400 && st < 500 {
		log.Warn("github refused to redeliver; not asking again", logattr.Err, err)
		return Report{Failed: f, Outcome: Refused, Err: err}, nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if rerr := deleteScript.Run(rctx, s.rdb, []string{claim}, token).Err(); rerr != nil {
		log.Warn("redelivery failed and its claim was not released; it is not asked for again", logattr.Err, errors.Join(err, rerr))
		return Report{Failed: f, Outcome: Errored, Err: err}, nil
	}
	if ctx.Err() != nil {
		return Report{Failed: f, Outcome: Errored, Err: err}, ctx.Err()
	}
	log.Warn("redelivery failed; the next sweep asks again", logattr.Err, err)
	return Report{Failed: f, Outcome: Errored, Err: err}, nil
}
