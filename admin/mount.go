package admin

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/runs"
)

// Mount mounts, as cfg configures them, the signed run pages
// (/runs/{run_id}) and, with AGENTFIX_ADMIN_TOKEN, the admin views
// (/admin/*) over the bot's queues. They read the run records from Redis
// and create nothing on disk, so the edge may run on a read-only
// filesystem.
func Mount(r chi.Router, cfg *config.App, rdb redis.UniversalClient, queues []string, log *slog.Logger) error {
	store, err := runs.NewReader(runs.Options{Dir: filepath.Join(cfg.DataDir, "runs"), Redis: rdb, Retention: cfg.RunRetention})
	if err != nil {
		return fmt.Errorf("admin views: %w", err)
	}
	s, err := New(Options{
		Token:        cfg.AdminToken,
		LinkKey:      runs.LinkKey(cfg.WebhookSecret),
		Runs:         store,
		Redis:        rdb,
		Queues:       queues,
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
