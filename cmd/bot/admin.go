package main

import (
	"log/slog"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/admin"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/jobs"
)

// mountAdmin mounts the signed run pages and, with AGENTFIX_ADMIN_TOKEN,
// the admin views over the bot's two queues (admin.Mount).
func mountAdmin(r chi.Router, cfg *config.App, rdb redis.UniversalClient, log *slog.Logger) error {
	return admin.Mount(r, cfg, rdb, []string{jobs.QueueAgent, jobs.QueueInteractive}, log)
}
