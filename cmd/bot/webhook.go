package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/webhook"
)

// runWebhook runs the HTTP edge alone. It needs a configured App and a
// shared Redis: an in-process one would strand the tasks it enqueues.
func (m *Main) runWebhook(ctx context.Context, args []string) error {
	var cf configFlags
	if err := parse(m.flagSet("webhook", &cf), args); err != nil {
		return err
	}
	cfg, log, err := m.loadConfig(cf)
	if err != nil {
		return err
	}
	if cfg.SetupMode() {
		return configError{Err: fmt.Errorf("AGENTFIX_APP_ID: required by `bot webhook` (setup mode is served by `bot serve`)")}
	}
	rdb, log, err := m.openRedis(ctx, cfg, log, false)
	if err != nil {
		return err
	}
	r := chi.NewRouter()
	if err := mountEdge(r, cfg, rdb, newRegistry(), log); err != nil {
		return err
	}
	return m.serveHTTP(ctx, cfg.ListenAddr, r, log)
}

// mountEdge mounts the webhook edge (/webhook, /healthz, /readyz, /metrics
// with asynq's queue metrics), the signed run pages and the admin views.
func mountEdge(r chi.Router, cfg *config.App, rdb redis.UniversalClient, reg *prometheus.Registry, log *slog.Logger) error {
	srv, err := webhook.New(webhook.Options{
		Config:           cfg,
		Redis:            rdb,
		Queue:            jobs.NewClient(rdb, cfg.MaxDuration),
		Registry:         reg,
		MaxInflightBytes: cfg.WebhookMaxInflightBytes, MaxClientInflightBytes: cfg.WebhookMaxClientInflightBytes,
		BodyTimeout: cfg.WebhookBodyTimeout, BodyTimeoutPerMiB: cfg.WebhookBodyTimeoutPerMiB,
		Logger: log,
	})
	if err != nil {
		return err
	}
	srv.Routes(r)
	if err := jobs.RegisterQueueMetrics(reg, rdb); err != nil {
		return err
	}
	return mountAdmin(r, cfg, rdb, log)
}
