package budget

import (
	"context"
	"fmt"
	"time"
)

// Usage is the state of one scope.
type Usage struct {
	Kind Kind
	// Spent is what settled calls cost; Held what running calls hold.
	Spent, Held Amount
	// Limit is the scope's limit; a zero field means none.
	Limit Amount
	// ResetAt is the next UTC midnight for a daily scope, zero for a job.
	ResetAt time.Time
}

// Spent returns the state of the scopes of s: the job's when s.Job is set,
// then the repository's and the installation's, for today (UTC).
func (b *Budget) Spent(ctx context.Context, s Scope) ([]Usage, error) {
	now := b.now()
	accts, err := b.accounts(s, now, false)
	if err != nil {
		return nil, fmt.Errorf("read budget: %w", err)
	}
	raw, err := stateScript.Run(ctx, b.rdb, keys(accts), now.UnixMilli()).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("read budget of %s: %w", s.Repo, err)
	}
	if len(raw) != 4*len(accts) {
		return nil, fmt.Errorf("read budget of %s: unexpected script reply %v", s.Repo, raw)
	}
	out := make([]Usage, len(accts))
	for i, a := range accts {
		v := raw[4*i : 4*i+4]
		out[i] = Usage{
			Kind:    a.kind,
			Spent:   Amount{USD: dollars(v[0]), Tokens: v[1]},
			Held:    Amount{USD: dollars(v[2]), Tokens: v[3]},
			Limit:   Amount{USD: dollars(a.limitMicros), Tokens: a.limitTokens},
			ResetAt: a.resetAt,
		}
	}
	return out, nil
}

// Check reports whether work for s may start: an *ExceededError for the
// first scope (job, repository, installation) whose spent and held amounts
// already reach its limit, or would pass it with need more (e.g. the
// estimate of a first model call; zero asks only whether anything is
// left). It reserves nothing: the budget may still run out before the
// first Reserve, which then refuses.
func (b *Budget) Check(ctx context.Context, s Scope, need Amount) error {
	nu, err := micros(need.USD)
	if err != nil || need.Tokens < 0 {
		return fmt.Errorf("check budget: need %+v must not be negative", need)
	}
	usage, err := b.Spent(ctx, s)
	if err != nil {
		return err
	}
	now := b.now()
	for _, u := range usage {
		su, _ := micros(u.Spent.USD)
		hu, _ := micros(u.Held.USD)
		lu, _ := micros(u.Limit.USD)
		var e *ExceededError
		switch {
		case over(lu, su+hu, nu):
			e = exceededUsage(u, false, need, now)
		case over(u.Limit.Tokens, u.Spent.Tokens+u.Held.Tokens, need.Tokens):
			e = exceededUsage(u, true, need, now)
		}
		if e != nil {
			b.metrics.exceeded.WithLabelValues(string(u.Kind)).Inc()
			return e
		}
	}
	return nil
}

// over is the rule of luaHeld's over, in Go.
func over(limit, used, ask int64) bool {
	return limit > 0 && (used >= limit || used+ask > limit)
}
