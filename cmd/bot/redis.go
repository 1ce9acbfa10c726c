package main

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

	"github.com/agentfix/agentfix/config"
)

// openRedis connects to AGENTFIX_REDIS_URL, or, when it is empty and embed
// is true (serve), starts an in-process Redis that is lost with the process.
// It returns the logger the command goes on with: log, with the lines of
// an unreachable Redis made into one a minute (redisOutage), which also
// receives go-redis's own lines.
func (m *Main) openRedis(ctx context.Context, cfg *config.App, log *slog.Logger, embed bool) (redis.UniversalClient, *slog.Logger, error) {
	if cfg.RedisURL == "" {
		if !embed {
			return nil, nil, configError{fmt.Errorf("AGENTFIX_REDIS_URL: required by this command (only `bot serve` embeds an in-process Redis)")}
		}
		mr, password, err := startEmbeddedRedis()
		if err != nil {
			return nil, nil, err
		}
		m.onClose(func() error { mr.Close(); return nil })
		log.Warn("AGENTFIX_REDIS_URL is empty: using an in-process Redis; it is not durable, queued jobs and delivery claims are lost when the process stops")
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), Password: password})
		m.onClose(rdb.Close)
		m.redisLog.to.Store(log)
		return rdb, log, nil
	}
	opt, err := asynq.ParseRedisURI(cfg.RedisURL)
	if err != nil {
		return nil, nil, configError{fmt.Errorf("AGENTFIX_REDIS_URL: %w", err)}
	}
	rdb, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return nil, nil, fmt.Errorf("AGENTFIX_REDIS_URL: unsupported connection type %T", opt)
	}
	now := m.now
	if now == nil {
		now = time.Now
	}
	outage := newRedisOutage(log, now)
	rdb.AddHook(outage)
	log = slog.New(outage.Filter(log.Handler()))
	m.redisLog.to.Store(log)
	m.onClose(rdb.Close)
	checkRedis(ctx, rdb, log)
	return rdb, log, nil
}

// startEmbeddedRedis starts the in-process Redis of `serve` on loopback
// with a random password made for this start, which only the process's
// own clients know: any local process (a sandboxed command among them)
// can connect to a loopback port, but none can read or queue without it.
func startEmbeddedRedis() (*miniredis.Miniredis, string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, "", fmt.Errorf("in-process redis password: %w", err)
	}
	password := hex.EncodeToString(b[:])
	mr := miniredis.NewMiniRedis()
	mr.RequireAuth(password)
	if err := mr.StartAddr("127.0.0.1:0"); err != nil {
		return nil, "", fmt.Errorf("start in-process redis: %w", err)
	}
	return mr, password, nil
}

// checkRedis warns when Redis is unreachable at startup (the process still
// starts; /readyz reports it) or evicts keys, which would drop queued tasks.
func checkRedis(ctx context.Context, rdb redis.UniversalClient, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		log.Warn("redis unreachable at startup; /readyz fails until it answers", logErr(err))
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
	if w := persistenceWarning(persistence["save"], aof["appendonly"]); w != "" {
		log.Warn(w)
	}
}

// persistenceWarning says what a Redis with neither snapshots (save) nor
// an append-only file keeps on a restart: nothing.
func persistenceWarning(save, appendonly string) string {
	if strings.TrimSpace(save) != "" || appendonly == "yes" {
		return ""
	}
	return "redis has neither RDB snapshots (save) nor an append-only file (appendonly): a restart loses queued jobs and delivery claims; the worker's sweep then ends their status comments as lost (set appendonly yes)"
}
