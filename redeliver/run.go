package redeliver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/internal/logattr"
)

// DefaultInterval is how often the worker's loop sweeps.
const DefaultInterval = 5 * time.Minute

// firstLookback is how far back a periodic sweep looks when no earlier
// sweep is recorded.
const firstLookback = time.Hour

// Run sweeps every interval until ctx ends, then returns nil. Each round,
// the worker that takes the leader lock sweeps, unless a sweep started less
// than half an interval ago; it looks back to one interval before the
// previous sweep (an hour on the first, at most Window), and holds back the
// deliveries no success followed. Errors are logged, and the next round
// tries again. The caller runs it on a goroutine of its own.
func (s *Sweeper) Run(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		return fmt.Errorf("redeliver: the interval must be positive, got %s", every)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := s.round(ctx, every); err != nil && ctx.Err() == nil {
			s.log.Warn("redelivery sweep failed; the next round tries again", logattr.Err, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// round is one round of Run. It returns the sweep's result, or nil when
// another worker leads or swept recently.
func (s *Sweeper) round(ctx context.Context, every time.Duration) (*Result, error) {
	l, ok, err := acquire(ctx, s.rdb, s.key("leader"), s.lockTTL)
	if err != nil {
		return nil, err
	}
	if !ok {
		s.log.Debug("another worker leads the redelivery sweep")
		return nil, nil
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		if err := l.release(rctx); err != nil {
			s.log.Warn("sweeper lock not released; it expires by itself", logattr.Err, err)
		}
	}()
	now := s.now()
	last, err := s.lastSweep(ctx)
	if err != nil {
		return nil, err
	}
	if !last.IsZero() && now.Sub(last) < every/2 {
		s.log.Debug("redelivery sweep skipped: another worker swept at " + last.UTC().Format(time.RFC3339))
		return nil, nil
	}
	since := now.Add(-firstLookback)
	if !last.IsZero() {
		since = last.Add(-every)
	}
	if oldest := now.Add(-Window); since.Before(oldest) {
		since = oldest
	}

	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("sweeper lock renewal panicked", logattr.Err, fmt.Errorf("panic: %v", p))
				cancel(errors.New("lock renewal panicked"))
			}
		}()
		l.keep(sctx, func(err error) { cancel(fmt.Errorf("sweeper lock lost: %w", err)) })
	}()
	res, err := s.sweep(sctx, since, true)
	cancel(nil)
	<-kept
	if err != nil {
		if cause := context.Cause(sctx); cause != nil && ctx.Err() == nil && !errors.Is(cause, context.Canceled) {
			err = cause
		}
		return &res, err
	}
	if err := s.rdb.Set(ctx, s.key("last"), now.UnixMilli(), Window).Err(); err != nil {
		return &res, fmt.Errorf("record the sweep: %w", err)
	}
	level := s.log.Debug
	if res.Count(Redelivered)+res.Count(Refused)+res.Count(Errored) > 0 {
		level = s.log.Info
	}
	level(fmt.Sprintf("redelivery sweep since %s: %d deliveries listed, %d failed: %d redelivered, %d redelivered before, %d held back, %d refused, %d errors",
		res.Since.UTC().Format(time.RFC3339), res.Listed, len(res.Reports), res.Count(Redelivered), res.Count(AlreadyRedelivered),
		res.Count(Held), res.Count(Refused), res.Count(Errored)))
	return &res, nil
}

// lastSweep returns when the last periodic sweep started (zero when none is
// recorded).
func (s *Sweeper) lastSweep(ctx context.Context) (time.Time, error) {
	v, err := s.rdb.Get(ctx, s.key("last")).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read the last sweep: %w", err)
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the last sweep: %q is not a time", v)
	}
	return time.UnixMilli(ms), nil
}
