// Package redisconn opens the process's connection to Redis: the client of
// AGENTFIX_REDIS_URL with the startup checks (reachable, no eviction,
// persistence), the in-process Redis of `bot serve`, and the outage log,
// which makes the many lines of an unreachable Redis one a minute.
package redisconn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/internal/logattr"
)

// Open connects to the Redis of url (AGENTFIX_REDIS_URL, in asynq's URI
// forms) and checks it (Check). It returns the client and the logger to go
// on with: log, with the lines of an unreachable Redis made into one a
// minute (Outage), reading the time from now. A url that does not parse is
// an error naming AGENTFIX_REDIS_URL; an unreachable Redis is not (the
// process starts, and says so).
func Open(ctx context.Context, url string, log *slog.Logger, now func() time.Time) (redis.UniversalClient, *slog.Logger, error) {
	opt, err := asynq.ParseRedisURI(url)
	if err != nil {
		return nil, nil, fmt.Errorf("AGENTFIX_REDIS_URL: %w", err)
	}
	rdb, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return nil, nil, fmt.Errorf("AGENTFIX_REDIS_URL: unsupported connection type %T", opt)
	}
	outage := NewOutage(log, now)
	rdb.AddHook(outage)
	log = slog.New(outage.Filter(log.Handler()))
	Check(ctx, rdb, log)
	return rdb, log, nil
}

// Embedded starts the in-process Redis of `serve` on loopback and returns
// a client of it, which closes it too. Its password is random, made for
// this start, and only the process's own clients know it: any local process
// (a sandboxed command among them) can connect to a loopback port, but
// none can read or queue without it.
func Embedded() (redis.UniversalClient, func() error, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, nil, fmt.Errorf("in-process redis password: %w", err)
	}
	password := hex.EncodeToString(b[:])
	mr := miniredis.NewMiniRedis()
	mr.RequireAuth(password)
	if err := mr.StartAddr("127.0.0.1:0"); err != nil {
		return nil, nil, fmt.Errorf("start in-process redis: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), Password: password})
	return rdb, func() error {
		err := rdb.Close()
		mr.Close()
		return err
	}, nil
}

// Check warns when Redis is unreachable at startup (the process still
// starts; /readyz reports it), evicts keys, which would drop queued tasks,
// or keeps nothing over a restart.
func Check(ctx context.Context, rdb redis.UniversalClient, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		log.Warn("redis unreachable at startup; /readyz fails until it answers", logattr.Err, err)
		return
	}
	policy, err := rdb.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		return // CONFIG is often disabled on managed Redis
	}
	if p := policy["maxmemory-policy"]; p != "" && p != "noeviction" {
		log.Warn("redis maxmemory-policy is " + p + ", not noeviction: Redis may drop queued tasks under memory pressure")
	}
	persistence, err := rdb.ConfigGet(ctx, "save").Result()
	if err != nil {
		return
	}
	aof, err := rdb.ConfigGet(ctx, "appendonly").Result()
	if err != nil {
		return
	}
	if w := PersistenceWarning(persistence["save"], aof["appendonly"]); w != "" {
		log.Warn(w)
	}
}

// PersistenceWarning says what a Redis with neither snapshots (save) nor
// an append-only file keeps on a restart: nothing.
func PersistenceWarning(save, appendonly string) string {
	if strings.TrimSpace(save) != "" || appendonly == "yes" {
		return ""
	}
	return "redis has neither RDB snapshots (save) nor an append-only file (appendonly): a restart loses queued jobs and delivery claims; the worker's sweep then ends their status comments as lost (set appendonly yes)"
}
