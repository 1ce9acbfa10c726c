package ghapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"

	"github.com/google/go-github/v66/github"

	"github.com/agentfix/agentfix/internal/logattr"
)

// Client makes the REST calls of one installation. Get it from
// App.Installation; it is safe for concurrent use.
type Client struct {
	app *App
	id  int64
	gh  *github.Client
}

// InstallationID returns the installation the Client acts for.
func (c *Client) InstallationID() int64 { return c.id }

// botLogin returns the login the installation acts as.
func (c *Client) botLogin(ctx context.Context) (string, error) {
	id, err := c.app.Identity(ctx)
	if err != nil {
		return "", err
	}
	return id.BotLogin, nil
}

// markerPrefix starts every marker; see Marker.
const markerPrefix = "<!-- agentfix:"

// markerRE finds a marker in a body.
var markerRE = regexp.MustCompile(`<!-- agentfix:[^>]*-->`)

// Marker returns a hidden HTML comment naming key, for the worker to put in
// the comments it posts so it can find them again: a retried job reuses its
// status comment, and a comment creation that failed ambiguously is looked
// up instead of posted twice. key should be unique per comment, for example
// "status:fix:owner/repo#12" or "reply:<delivery id>"; it must not contain
// '>'.
func Marker(key string) string {
	return markerPrefix + key + " -->"
}

// markerOf returns the first marker in body, or "".
func markerOf(body string) string {
	return markerRE.FindString(body)
}

// maxPages bounds a paginated listing (100 items per page), so a
// misbehaving server cannot keep a call looping.
const maxPages = 1000

// paginate collects every page of a listing, 100 items at a time.
func paginate[T any](list func(opts github.ListOptions) ([]T, *github.Response, error)) ([]T, error) {
	opts := github.ListOptions{PerPage: 100}
	var all []T
	for range maxPages {
		page, resp, err := list(opts)
		if err != nil {
			return nil, apiError(err)
		}
		all = append(all, page...)
		if resp.NextPage == 0 {
			return all, nil
		}
		opts.Page = resp.NextPage
	}
	return nil, fmt.Errorf("listing has more than %d pages", maxPages)
}

// createOnce runs create, which the transport sends once, and makes it
// idempotent: after an ambiguous failure (a 5xx answer or a connection
// error: GitHub may have acted) it waits, asks find whether the previous
// attempt took effect, and creates again only when it did not. A nil find
// means the creation cannot be looked up, and is not retried.
func createOnce[T any](ctx context.Context, c *Client, what string, create func(context.Context) (T, error), find func(context.Context) (T, bool, error)) (T, error) {
	var zero T
	for attempt := 1; ; attempt++ {
		v, err := create(ctx)
		if err == nil {
			return v, nil
		}
		if find == nil || !ambiguous(ctx, err) || attempt >= c.app.policy.maxAttempts {
			return zero, apiError(err)
		}
		wait := c.app.policy.backoff(attempt)
		c.app.log.LogAttrs(ctx, slog.LevelWarn, "github creation failed ambiguously; looking it up before retrying",
			slog.String(logattr.Reason, what), slog.Int(logattr.Attempt, attempt),
			slog.Duration(logattr.Wait, wait), slog.String(logattr.Err, err.Error()))
		if serr := c.app.policy.sleep(ctx, wait); serr != nil {
			return zero, serr
		}
		got, ok, ferr := find(ctx)
		if ferr != nil {
			return zero, fmt.Errorf("%w; then looking for it: %w", apiError(err), ferr)
		}
		if ok {
			return got, nil
		}
	}
}

// ambiguous reports whether a failed request may still have taken effect:
// GitHub answered 5xx, or the connection failed after the request may have
// been sent.
func ambiguous(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var rl *RateLimitError
	if errors.As(err, &rl) {
		return false
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) {
		return er.Response != nil && er.Response.StatusCode >= 500
	}
	var ue *url.Error
	return errors.As(err, &ue)
}
