package main

import (
	"context"
	"fmt"
	"net"

	"github.com/go-chi/chi/v5"

	"github.com/agentfix/agentfix/internal/group"
	"github.com/agentfix/agentfix/internal/httpserve"
	"github.com/agentfix/agentfix/webhook"
)

// runServe runs everything in one process: the HTTP edge and both worker
// queues. With no App configured it runs in setup mode: /healthz, /readyz
// and /setup only, never /webhook, and no worker. Without
// AGENTFIX_REDIS_URL it embeds an in-process Redis (not durable).
func (m *Main) runServe(ctx context.Context, args []string) error {
	var cf configFlags
	if err := parse(m.flagSet("serve", &cf), args); err != nil {
		return err
	}
	cfg, log, err := m.loadConfig(cf)
	if err != nil {
		return err
	}
	rdb, log, err := m.openRedis(ctx, cfg, log, true)
	if err != nil {
		return err
	}
	reg := newRegistry()
	r := chi.NewRouter()
	if cfg.SetupMode() {
		log.Warn("setup mode: no GitHub App is configured yet")
		webhook.HealthRoutes(r, rdb, reg)
		if err := m.mountSetup(r, cfg, log); err != nil {
			return err
		}
		return m.serveHTTP(ctx, cfg.ListenAddr, r, log, func(a net.Addr) {
			fmt.Fprintf(m.Stderr, "\nagentfix is in setup mode: open %s to create its GitHub App.\n\n", httpserve.OpenURL(cfg.PublicURL, a, "/setup"))
		})
	}
	if err := mountEdge(r, cfg, rdb, reg, log); err != nil {
		return err
	}
	w, err := newWorker(ctx, cfg, rdb, reg, log)
	if err != nil {
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
