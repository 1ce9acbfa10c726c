package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/redeliver"
)

// runRedeliver asks GitHub to redeliver, once each, the App's webhook
// deliveries that failed since a time, and prints what it did. Deliveries
// other sweeps (the workers' loop, an earlier run) redelivered are not asked
// for again; that needs the shared Redis, except with --dry-run, which only
// lists them.
func (m *Main) runRedeliver(ctx context.Context, args []string) error {
	var cf configFlags
	fs := m.flagSet("redeliver", &cf)
	since := fs.Duration("since", 6*time.Hour, "look at the deliveries of this long ago and since (GitHub keeps them 3 days: at most 72h)")
	dryRun := fs.Bool("dry-run", false, "list the failed deliveries without redelivering them (needs no Redis)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *since <= 0 || *since > redeliver.Window {
		return usageError{fmt.Sprintf("bot redeliver: --since must be within (0, %s], got %s", redeliver.Window, *since)}
	}
	cfg, log, err := m.loadConfig(cf)
	if err != nil {
		return err
	}
	if cfg.SetupMode() {
		return configError{Err: fmt.Errorf("AGENTFIX_APP_ID: required by `bot redeliver` (no GitHub App is configured)")}
	}
	app, err := newApp(cfg, log, nil)
	if err != nil {
		return err
	}
	from := time.Now().Add(-*since)
	if *dryRun {
		res, err := redeliver.DryRun(ctx, app, from)
		if err != nil {
			return err
		}
		res.Print(m.Stdout)
		return nil
	}
	rdb, log, err := m.openRedis(ctx, cfg, log, false)
	if err != nil {
		return err
	}
	sw, err := redeliver.New(redeliver.Options{GitHub: app, Redis: rdb, AppID: cfg.AppID, Logger: log})
	if err != nil {
		return err
	}
	res, err := sw.Sweep(ctx, from)
	res.Print(m.Stdout)
	if err != nil {
		return err
	}
	return res.Err()
}

// newApp returns the GitHub App of cfg, counting its calls on reg when
// reg is not nil.
func newApp(cfg *config.App, log *slog.Logger, reg prometheus.Registerer) (*ghapp.App, error) {
	key, err := cfg.PrivateKeyPEM()
	if err != nil {
		return nil, configError{Err: fmt.Errorf("AGENTFIX_PRIVATE_KEY_FILE: %w", err)}
	}
	app, err := ghapp.New(ghapp.Options{AppID: cfg.AppID, PrivateKey: key, APIURL: cfg.GitHubAPIURL, Logger: log, Registerer: reg})
	if err != nil {
		return nil, configError{Err: err}
	}
	return app, nil
}
