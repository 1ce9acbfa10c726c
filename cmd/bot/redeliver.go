package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

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
		return configError{fmt.Errorf("AGENTFIX_APP_ID: required by `bot redeliver` (no GitHub App is configured)")}
	}
	app, err := redeliverApp(cfg, log)
	if err != nil {
		return err
	}
	from := time.Now().Add(-*since)
	if *dryRun {
		failed, listed, err := redeliver.List(ctx, app, from)
		if err != nil {
			return err
		}
		res := redeliver.Result{Since: from, Listed: listed}
		for _, f := range failed {
			res.Reports = append(res.Reports, redeliver.Report{Failed: f, Outcome: "would redeliver"})
		}
		printRedeliveries(m.Stdout, res)
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
	printRedeliveries(m.Stdout, res)
	if err != nil {
		return err
	}
	if n := res.Count(redeliver.Errored); n > 0 {
		return fmt.Errorf("%d of %d failed deliveries could not be redelivered; run bot redeliver again to retry them", n, len(res.Reports))
	}
	return nil
}

// redeliverApp returns the GitHub App of cfg.
func redeliverApp(cfg *config.App, log *slog.Logger) (*ghapp.App, error) {
	key, err := cfg.PrivateKeyPEM()
	if err != nil {
		return nil, configError{fmt.Errorf("AGENTFIX_PRIVATE_KEY_FILE: %w", err)}
	}
	app, err := ghapp.New(ghapp.Options{AppID: cfg.AppID, PrivateKey: key, APIURL: cfg.GitHubAPIURL, Logger: log})
	if err != nil {
		return nil, configError{err}
	}
	return app, nil
}

// printRedeliveries writes a sweep's result for people: a summary line,
// one line per failed delivery (oldest first), the errors GitHub gave, and
// the counts of each outcome.
func printRedeliveries(w io.Writer, res redeliver.Result) {
	fmt.Fprintf(w, "Webhook deliveries since %s: %d listed, %d failed.\n", res.Since.UTC().Format(time.RFC3339), res.Listed, len(res.Reports))
	if len(res.Reports) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OUTCOME\tDELIVERY\tEVENT\tLAST ANSWER\tFIRST ATTEMPT\tATTEMPTS")
	counts := map[redeliver.Outcome]int{}
	var order []redeliver.Outcome
	for _, r := range res.Reports {
		event := r.Latest.Event
		if r.Latest.Action != "" {
			event += "." + r.Latest.Action
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", r.Outcome, r.GUID, event, answer(r.Latest), r.First.UTC().Format(time.RFC3339), r.Attempts)
		if counts[r.Outcome] == 0 {
			order = append(order, r.Outcome)
		}
		counts[r.Outcome]++
	}
	tw.Flush()
	for _, r := range res.Reports {
		if r.Err != nil {
			fmt.Fprintf(w, "%s: %s\n", r.GUID, r.Err)
		}
	}
	var parts []string
	for _, o := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
	}
	fmt.Fprintln(w, strings.Join(parts, ", ")+".")
}

// answer describes how an attempt was answered.
func answer(d ghapp.HookDelivery) string {
	if d.StatusCode == 0 {
		return "none (" + d.Status + ")"
	}
	return fmt.Sprintf("%d", d.StatusCode)
}
