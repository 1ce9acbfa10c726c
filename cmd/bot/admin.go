package main

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/go-chi/chi/v5"
	"github.com/hibiken/asynq"
	"github.com/hibiken/asynq/x/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/admin"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/runs"
)

// mountAdmin mounts the signed run pages (/runs/{run_id}) and, with
// AGENTFIX_ADMIN_TOKEN, the admin views (/admin/*). They read the run
// records from Redis and create nothing on disk, so the edge may run on a
// read-only filesystem.
func mountAdmin(r chi.Router, cfg *config.App, rdb redis.UniversalClient, log *slog.Logger) error {
	store, err := runs.NewReader(runs.Options{Dir: filepath.Join(cfg.DataDir, "runs"), Redis: rdb, Retention: cfg.RunRetention})
	if err != nil {
		return fmt.Errorf("admin views: %w", err)
	}
	s, err := admin.New(admin.Options{
		Token:        cfg.AdminToken,
		LinkKey:      runs.LinkKey(cfg.WebhookSecret),
		Runs:         store,
		Redis:        rdb,
		Queues:       []string{jobs.QueueAgent, jobs.QueueInteractive},
		PublicURL:    cfg.PublicURL,
		GitHubWebURL: cfg.GitHubWebURL,
		Logger:       log,
	})
	if err != nil {
		return err
	}
	s.Routes(r)
	if cfg.AdminToken == "" {
		log.Info("admin views are off: set AGENTFIX_ADMIN_TOKEN to serve /admin")
	}
	return nil
}

// registerQueueMetrics registers asynq's queue collector (asynq_queue_size,
// asynq_queue_latency_seconds, asynq_tasks_processed_total, …, labelled by
// queue) on reg. It reads Redis at every scrape, and not before; every
// process that registers it reports the same values, so aggregate with
// max, not sum.
func registerQueueMetrics(reg *prometheus.Registry, rdb redis.UniversalClient) error {
	c := metrics.NewQueueMetricsCollector(asynq.NewInspectorFromRedisClient(rdb))
	if err := reg.Register(undescribed{c}); err != nil {
		return fmt.Errorf("register queue metrics: %w", err)
	}
	return nil
}

// undescribed registers a collector unchecked: asynq's collector describes
// itself by collecting, which would read Redis while the process starts
// (and wait out Redis's timeouts when it is unreachable).
type undescribed struct{ prometheus.Collector }

// Describe sends no descriptors (an unchecked collector).
func (undescribed) Describe(chan<- *prometheus.Desc) {}
