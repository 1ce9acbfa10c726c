package redeliver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Scripts that act on a key only while it holds the caller's token, so a
// holder whose lock expired and passed to another never renews or deletes
// the other's.
var (
	renewScript  = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`)
	deleteScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
)

// lock is a lock held in Redis: key holds token until the lock is released
// or its TTL passes without renewal.
type lock struct {
	rdb   redis.UniversalClient
	key   string
	token string
	ttl   time.Duration
}

// acquire takes the lock at key for ttl, unless someone holds it.
func acquire(ctx context.Context, rdb redis.UniversalClient, key string, ttl time.Duration) (*lock, bool, error) {
	token, err := newToken()
	if err != nil {
		return nil, false, err
	}
	ok, err := rdb.SetNX(ctx, key, token, ttl).Result()
	if err != nil {
		return nil, false, fmt.Errorf("take lock %s: %w", key, err)
	}
	if !ok {
		return nil, false, nil
	}
	return &lock{rdb: rdb, key: key, token: token, ttl: ttl}, true, nil
}

// renew extends the lock by its TTL; false means it was lost (it expired,
// and perhaps another holds it now).
func (l *lock) renew(ctx context.Context) (bool, error) {
	n, err := renewScript.Run(ctx, l.rdb, []string{l.key}, l.token, l.ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("renew lock %s: %w", l.key, err)
	}
	return n == 1, nil
}

// release gives the lock up if it is still held.
func (l *lock) release(ctx context.Context) error {
	if err := deleteScript.Run(ctx, l.rdb, []string{l.key}, l.token).Err(); err != nil {
		return fmt.Errorf("release lock %s: %w", l.key, err)
	}
	return nil
}

// keep renews the lock every third of its TTL until ctx is done, and calls
// lost when the lock is lost or cannot be renewed: the holder must stop
// acting as its owner.
func (l *lock) keep(ctx context.Context, lost func(error)) {
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ok, err := l.renew(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			lost(err)
			return
		case !ok:
			lost(errors.New("lock " + l.key + " expired and was taken over"))
			return
		}
	}
}

// newToken returns a random value that identifies one holder.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
