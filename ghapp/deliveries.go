package ghapp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-github/v66/github"
)

// ListHookDeliveries returns the deliveries of the App's webhook made at or
// after since, newest first (GitHub keeps them for a few days).
func (a *App) ListHookDeliveries(ctx context.Context, since time.Time) ([]HookDelivery, error) {
	var out []HookDelivery
	opts := &github.ListCursorOptions{PerPage: 100}
	for range maxPages {
		page, resp, err := a.gh.Apps.ListHookDeliveries(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list webhook deliveries of app %d: %w", a.id, apiError(err))
		}
		older := false
		for _, d := range page {
			if d.GetDeliveredAt().Time.Before(since) {
				older = true
				continue
			}
			out = append(out, toHookDelivery(d))
		}
		if older || resp.Cursor == "" || len(page) == 0 {
			return out, nil
		}
		opts.Cursor = resp.Cursor
	}
	return nil, fmt.Errorf("list webhook deliveries of app %d: more than %d pages", a.id, maxPages)
}

// RedeliverHookDelivery asks GitHub to deliver delivery id again.
func (a *App) RedeliverHookDelivery(ctx context.Context, id int64) error {
	_, _, err := a.gh.Apps.RedeliverHookDelivery(repeatable(ctx), id)
	var accepted *github.AcceptedError
	if err != nil && !errors.As(err, &accepted) {
		return fmt.Errorf("redeliver webhook delivery %d: %w", id, apiError(err))
	}
	return nil
}
