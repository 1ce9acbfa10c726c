package budget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Reservation holds an estimate of one model call in every scope of a job
// until it is settled. A Reservation belongs to one goroutine.
type Reservation struct {
	b        *Budget
	id       string
	marker   string // key marking the reservation settled
	accts    []account
	estimate Amount
	settled  bool
}

// Estimate returns the amount the reservation holds.
func (r *Reservation) Estimate() Amount { return r.estimate }

// Reserve holds estimate — an upper bound of what the next model call can
// cost — in the job's, the repository's and the installation's scope at
// once, or in none: when any scope's spent + held + estimate would pass its
// limit it returns an *ExceededError for the first such scope (job, then
// repository, then installation). s.Job is required. The reservation counts
// until Settle or Release, or until it expires (Options.ReservationTTL).
func (b *Budget) Reserve(ctx context.Context, s Scope, estimate Amount) (*Reservation, error) {
	eu, err := micros(estimate.USD)
	if err != nil || estimate.Tokens < 0 {
		return nil, fmt.Errorf("reserve budget: estimate %+v must not be negative", estimate)
	}
	now := b.now()
	accts, err := b.accounts(s, now, true)
	if err != nil {
		return nil, fmt.Errorf("reserve budget: %w", err)
	}
	id, err := newID()
	if err != nil {
		return nil, fmt.Errorf("reserve budget: %w", err)
	}
	args := []any{now.UnixMilli(), now.Add(b.resTTL).UnixMilli(), id, eu, estimate.Tokens}
	for _, a := range accts {
		args = append(args, a.limitMicros, a.limitTokens, ttlSeconds(a.ttl))
	}
	res, err := reserveScript.Run(ctx, b.rdb, keys(accts), args...).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("reserve budget of %s: %w", s.Repo, err)
	}
	if len(res) == 4 && res[0] >= 1 && int(res[0]) <= len(accts) {
		a := accts[res[0]-1]
		e := exceeded(a, res[1] == 2, res[2], res[3], estimate, now)
		b.metrics.exceeded.WithLabelValues(string(a.kind)).Inc()
		return nil, e
	}
	if len(res) != 1 || res[0] != 0 {
		return nil, fmt.Errorf("reserve budget of %s: unexpected script reply %v", s.Repo, res)
	}
	marker := b.tag(s.Installation) + "settled:" + id
	return &Reservation{b: b, id: id, marker: marker, accts: accts, estimate: estimate}, nil
}

// Settlement says how a settled reservation compared with the call.
type Settlement struct {
	// Expired is set when the reservation had expired before it was
	// settled (the amount was charged all the same); other workers may
	// have spent what it held, so a limit may be passed by up to the
	// actual amount.
	Expired bool
	// Over is what the call cost beyond the estimate (zero when within);
	// a limit may be passed by that much. Raise the estimate.
	Over Amount
}

// SettleTimeout bounds one Settle.
const SettleTimeout = 10 * time.Second

// Settle releases the reservation and charges actual, what the call cost,
// to every scope of the job — always, even beyond a limit: the money is
// spent. It charges even when ctx is already cancelled (a stopped job's last
// call cost money all the same): it keeps ctx's values but not its
// cancellation, and gives up after SettleTimeout. A Reservation settles
// once; after an error it may be retried, and a retry never charges twice.
func (r *Reservation) Settle(ctx context.Context, actual Amount) (Settlement, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), SettleTimeout)
	defer cancel()
	if r.settled {
		return Settlement{}, errors.New("settle budget: the reservation is already settled")
	}
	au, err := micros(actual.USD)
	if err != nil || actual.Tokens < 0 {
		return Settlement{}, fmt.Errorf("settle budget: actual %+v must not be negative", actual)
	}
	args := []any{r.b.now().UnixMilli(), r.id, au, actual.Tokens, ttlSeconds(keyTTL)}
	for _, a := range r.accts {
		args = append(args, ttlSeconds(a.ttl))
	}
	live, err := settleScript.Run(ctx, r.b.rdb, append(keys(r.accts), r.marker), args...).Int64()
	if err != nil {
		return Settlement{}, fmt.Errorf("settle budget: %w", err)
	}
	r.settled = true
	// Counted here also when an earlier attempt charged (live == 2): its
	// reply was lost, so it counted nothing.
	for _, a := range r.accts {
		r.b.metrics.spentUSD.WithLabelValues(string(a.kind)).Add(dollars(au))
		r.b.metrics.spentTokens.WithLabelValues(string(a.kind)).Add(float64(actual.Tokens))
	}
	if live == 2 {
		return Settlement{}, nil
	}
	st := Settlement{Expired: live == 0}
	if eu, _ := micros(r.estimate.USD); au > eu {
		st.Over.USD = dollars(au - eu)
	}
	if actual.Tokens > r.estimate.Tokens {
		st.Over.Tokens = actual.Tokens - r.estimate.Tokens
	}
	return st, nil
}

// Release gives the reservation back without charging anything: the call
// was not made.
func (r *Reservation) Release(ctx context.Context) error {
	_, err := r.Settle(ctx, Amount{})
	return err
}

func newID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("reservation id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func ttlSeconds(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}
