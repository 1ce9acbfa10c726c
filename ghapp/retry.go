package ghapp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
)

// RetryOptions bound how a call is retried; zero fields take the defaults.
type RetryOptions struct {
	// MaxAttempts is the most attempts of one call, the first included
	// (default 4).
	MaxAttempts int
	// BaseDelay is the backoff before the second attempt after a 5xx or a
	// connection error; it doubles per attempt (default 1s).
	BaseDelay time.Duration
	// MaxDelay caps one backoff (default 30s).
	MaxDelay time.Duration
	// MaxRateLimitWait is the longest wait for a rate limit to lift before
	// the call fails with *RateLimitError (default 3m).
	MaxRateLimitWait time.Duration
}

// Defaults of RetryOptions.
const (
	defaultMaxAttempts      = 4
	defaultBaseDelay        = time.Second
	defaultMaxDelay         = 30 * time.Second
	defaultMaxRateLimitWait = 3 * time.Minute
	// secondaryLimitWait is GitHub's advice for a secondary rate limit that
	// names no time: wait at least one minute.
	secondaryLimitWait = time.Minute
	// resetSkew is added to X-RateLimit-Reset against clock skew.
	resetSkew = time.Second
	// maxErrorBody caps how much of an error answer is read to recognise a
	// secondary rate limit.
	maxErrorBody = 64 << 10
)

// retryPolicy decides, after each attempt, whether and when to try again.
type retryPolicy struct {
	maxAttempts int
	baseDelay   time.Duration
	maxDelay    time.Duration
	maxWait     time.Duration
	sleep       func(context.Context, time.Duration) error
	now         func() time.Time
}

// verdict is the policy's answer about one attempt.
type verdict struct {
	retry  bool
	wait   time.Duration
	reason string
	// err, when set, replaces the attempt's outcome (a rate limit too long
	// to wait for).
	err error
}

// judge looks at one attempt's outcome. repeatable says whether the request
// may be sent again after GitHub possibly acted on it (5xx, connection
// error); rate-limited requests are always repeatable. judge may read and
// restore resp.Body.
func (p *retryPolicy) judge(ctx context.Context, attempt int, repeatable bool, resp *http.Response, err error) verdict {
	if ctx.Err() != nil {
		return verdict{}
	}
	if err != nil {
		var herr *ghinstallation.HTTPError
		if !errors.As(err, &herr) || herr.Response == nil {
			if !repeatable || attempt >= p.maxAttempts {
				return verdict{}
			}
			return verdict{retry: true, wait: p.backoff(attempt), reason: "connection error"}
		}
		// The installation token could not be refreshed; that POST is
		// always safe to repeat, whatever the request it was made for.
		resp, repeatable = herr.Response, true
	}
	if wait, ok := p.rateLimitWait(resp); ok {
		if wait > p.maxWait || attempt >= p.maxAttempts {
			return verdict{err: &RateLimitError{Reset: p.now().Add(wait)}}
		}
		return verdict{retry: true, wait: wait, reason: "rate limit"}
	}
	if resp.StatusCode >= 500 && repeatable && attempt < p.maxAttempts {
		return verdict{retry: true, wait: p.backoff(attempt), reason: "server error"}
	}
	return verdict{}
}

// backoff is the wait after the given failed attempt: BaseDelay doubled per
// attempt, capped at MaxDelay, with the upper half jittered.
func (p *retryPolicy) backoff(attempt int) time.Duration {
	d := p.maxDelay
	if attempt-1 < 32 {
		if e := p.baseDelay << (attempt - 1); e > 0 && e < d {
			d = e
		}
	}
	half := d / 2
	return half + rand.N(half+1)
}

// rateLimitWait reports whether resp is a rate limit and how long GitHub
// asks the caller to wait.
func (p *retryPolicy) rateLimitWait(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests {
		return 0, false
	}
	if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), p.now()); ok {
		return d, true
	}
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		if sec, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return max(time.Unix(sec, 0).Sub(p.now())+resetSkew, 0), true
		}
		return secondaryLimitWait, true
	}
	if resp.StatusCode == http.StatusTooManyRequests || mentionsSecondaryLimit(resp) {
		return secondaryLimitWait, true
	}
	return 0, false
}

// parseRetryAfter reads a Retry-After value in seconds or as an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if sec, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && sec >= 0 {
		return time.Duration(sec) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// mentionsSecondaryLimit reads (at most maxErrorBody of) a 403 answer,
// restores its body, and reports whether GitHub's message names a secondary
// or abuse rate limit.
func mentionsSecondaryLimit(resp *http.Response) bool {
	if resp.Body == nil {
		return false
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	rest := resp.Body
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(data), rest), rest}
	if err != nil {
		return false
	}
	s := strings.ToLower(string(data))
	return strings.Contains(s, "secondary rate limit") || strings.Contains(s, "abuse")
}

// sleepContext waits for d or until ctx is done.
func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
