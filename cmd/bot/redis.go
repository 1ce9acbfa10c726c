package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/internal/redisconn"
)

// openRedis connects to AGENTFIX_REDIS_URL, or, when it is empty and embed
// is true (serve), starts an in-process Redis that is lost with the process.
// It returns the logger the command goes on with (redisconn.Open's), which
// also receives go-redis's own lines.
func (m *Main) openRedis(ctx context.Context, cfg *config.App, log *slog.Logger, embed bool) (redis.UniversalClient, *slog.Logger, error) {
	if cfg.RedisURL == "" {
		if !embed {
			return nil, nil, configError{Err: fmt.Errorf("AGENTFIX_REDIS_URL: required by this command (only `bot serve` embeds an in-process Redis)")}
		}
		rdb, closeRedis, err := redisconn.Embedded()
		if err != nil {
			return nil, nil, err
		}
		m.onClose(closeRedis)
		log.Warn("AGENTFIX_REDIS_URL is empty: using an in-process Redis; it is not durable, queued jobs and delivery claims are lost when the process stops")
		m.redisLog.Use(log)
		return rdb, log, nil
	}
	now := m.now
	if now == nil {
		now = time.Now
	}
	rdb, log, err := redisconn.Open(ctx, cfg.RedisURL, log, now)
	if err != nil {
		return nil, nil, configError{Err: err}
	}
	m.redisLog.Use(log)
	m.onClose(rdb.Close)
	return rdb, log, nil
}
