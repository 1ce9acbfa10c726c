package main

import (
	"context"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/redeliver"
)

// newSweeperLoop returns the worker's periodic redelivery sweep (DESIGN.md
// §5): every redeliver.DefaultInterval, the worker holding the leader lock
// asks GitHub to redeliver each failed webhook delivery once. It uses an
// App client of its own, without metrics, so the worker's GitHub metrics
// count job traffic only.
func newSweeperLoop(cfg *config.App, rdb redis.UniversalClient, log *slog.Logger) (func(context.Context) error, error) {
	app, err := newApp(cfg, log, nil)
	if err != nil {
		return nil, err
	}
	sw, err := redeliver.New(redeliver.Options{GitHub: app, Redis: rdb, AppID: cfg.AppID, Logger: log})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return sw.Run(ctx, redeliver.DefaultInterval) }, nil
}
