package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/llm"
	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/internal/group"
	"github.com/agentfix/agentfix/jobs/worker"
	"github.com/agentfix/agentfix/models"
	"github.com/agentfix/agentfix/runs"
	"github.com/agentfix/agentfix/sandbox"
	"github.com/agentfix/agentfix/setupcache"
	"github.com/agentfix/agentfix/webhook"
	"github.com/agentfix/agentfix/workspace"
)

// runWorker runs the two worker queues (interactive and agent) with a
// listener for /healthz, /readyz and /metrics. It needs a configured App,
// a model and a shared Redis.
func (m *Main) runWorker(ctx context.Context, args []string) error {
	var cf configFlags
	if err := parse(m.flagSet("worker", &cf), args); err != nil {
		return err
	}
	cfg, log, err := m.loadConfig(cf)
	if err != nil {
		return err
	}
	if cfg.SetupMode() {
		return configError{Err: fmt.Errorf("AGENTFIX_APP_ID: required by `bot worker` (setup mode is served by `bot serve`)")}
	}
	rdb, log, err := m.openRedis(ctx, cfg, log, false)
	if err != nil {
		return err
	}
	reg := newRegistry()
	w, err := newWorker(ctx, cfg, rdb, reg, log)
	if err != nil {
		return err
	}
	r := chi.NewRouter()
	webhook.HealthRoutes(r, rdb, reg)
	// The admin views and signed run pages, as on the edge.
	if err := mountAdmin(r, cfg, rdb, log); err != nil {
		return err
	}
	sweep, err := newSweeperLoop(cfg, rdb, log)
	if err != nil {
		return err
	}
	return group.Run(ctx,
		func(ctx context.Context) error { return m.serveHTTP(ctx, cfg.ListenAddr, r, log) },
		w.Run,
		sweep,
	)
}

// newWorker wires the worker: the GitHub App, the repository cache and run
// records under AGENTFIX_DATA_DIR, the budgets on the shared Redis, the
// signed run links of PR bodies (with AGENTFIX_PUBLIC_URL), and the
// sandbox and model named by the configuration. Names that select
// nothing, a sandbox that cannot run here (bwrap missing, no Docker daemon
// or image) and a model that cannot be built or whose key is refused stop
// startup, the sandbox checked before the model is called.
func newWorker(ctx context.Context, cfg *config.App, rdb redis.UniversalClient, reg *prometheus.Registry, log *slog.Logger) (*worker.Worker, error) {
	if cfg.Model == "" {
		return nil, configError{Err: errors.New("AGENTFIX_MODEL: required by the worker, e.g. openai/gpt-5 or anthropic/claude-sonnet-4-5")}
	}
	model, err := models.New(cfg, cfg.Model, log, nil)
	if err != nil {
		return nil, err
	}
	newModel, err := models.Counted(cfg, log, reg)
	if err != nil {
		return nil, err
	}
	sb, err := sandbox.ForWorkerChecked(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	if err := models.Check(ctx, cfg, model, log); err != nil {
		return nil, err
	}
	app, err := newApp(cfg, log, reg)
	if err != nil {
		return nil, err
	}
	cache, err := workspace.NewCache(workspace.CacheOptions{Dir: filepath.Join(cfg.DataDir, "repos"), Logger: log})
	if err != nil {
		return nil, fmt.Errorf("AGENTFIX_DATA_DIR: %w", err)
	}
	store, err := runs.New(runs.Options{Dir: filepath.Join(cfg.DataDir, "runs"), Redis: rdb, Retention: cfg.RunRetention})
	if err != nil {
		return nil, fmt.Errorf("AGENTFIX_DATA_DIR: %w", err)
	}
	spend, err := budget.New(rdb, budget.LimitsFrom(cfg), budget.Options{Registerer: reg})
	if err != nil {
		return nil, configError{Err: err}
	}
	setupCaches, err := setupcache.New(setupcache.Options{Dir: filepath.Join(cfg.DataDir, "setup-caches"), MaxBytes: cfg.SetupCacheBytes, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("AGENTFIX_DATA_DIR: %w", err)
	}
	return worker.New(worker.Options{
		JobDisk: sb.Disk, Images: sb.Images, SetupCache: setupCaches,
		Config: cfg, Redis: rdb, GitHub: worker.FromApp(app), Cache: cache, Runs: store,
		Sandbox: sb.Factory, Model: newModel,
		Budget: spend, ModelPrice: modelPrice,
		PublicURL: cfg.PublicURL, LinkKey: runs.LinkKey(cfg.WebhookSecret),
		Registry: reg, Logger: log,
	})
}

// modelPrice tells the worker's budgets the most one call of a model
// built by models.New can cost: its price per million tokens (input at the
// larger of the input and cache-write prices) and its reply limit where
// one is sent (OpenAI-compatible servers keep theirs, and the worker
// reserves its default allowance).
func modelPrice(m agent.Model) worker.ModelPrice {
	lm, ok := m.(*llm.Model)
	if !ok {
		return worker.ModelPrice{}
	}
	p := lm.Price()
	return worker.ModelPrice{InputPerM: max(p.Input, p.CacheWrite), OutputPerM: p.Output, MaxOutputTokens: lm.MaxOutputTokens()}
}
