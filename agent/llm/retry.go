package llm

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// callError is a failed provider call, classified: the HTTP status (0 for
// a connection error), the provider's message, a Retry-After, whether the
// prompt no longer fits the context window, and whether a 200 answer came
// without a reply (no choices, no content), which is retried like a 5xx.
type callError struct {
	provider        string
	status          int
	message         string
	retryAfter      time.Duration
	contextExceeded bool
	emptyReply      bool
	err             error
}

func (e *callError) Error() string {
	if e.status == 0 {
		return fmt.Sprintf("%s: %v", e.provider, e.err)
	}
	msg := fmt.Sprintf("%s: %d %s", e.provider, e.status, http.StatusText(e.status))
	if e.message != "" {
		msg += ": " + e.message
	}
	return msg
}

func (e *callError) Unwrap() error { return e.err }

// refusedKey reports a provider's refusal of the credentials.
func (e *callError) refusedKey() bool {
	return e.status == http.StatusUnauthorized || e.status == http.StatusForbidden
}

// retryable reports failures worth another attempt: connection errors,
// timeouts, conflicts, rate limits, server errors and empty replies.
// Invalid requests, authentication, permission and unknown-model errors
// are not.
func (e *callError) retryable() bool {
	switch {
	case e.emptyReply, e.status == 0, e.status == http.StatusRequestTimeout, e.status == http.StatusConflict,
		e.status == http.StatusTooManyRequests, e.status >= 500:
		return true
	}
	return false
}

// contextPhrases are how providers and OpenAI-compatible servers (vLLM,
// llama.cpp, Ollama) say that the prompt does not fit the context window.
var contextPhrases = []string{
	"context_length_exceeded", "maximum context length", "context length", "context window",
	"prompt is too long", "too many tokens", "exceed context limit", "exceeds the context",
	"input is too long", "reduce the length",
}

// isContextExceeded classifies a refused request by its status and text.
func isContextExceeded(status int, text string) bool {
	if status == http.StatusRequestEntityTooLarge {
		return true
	}
	if status != http.StatusBadRequest {
		return false
	}
	text = strings.ToLower(text)
	for _, p := range contextPhrases {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}

// retryAfter reads how long the provider asks to wait: retry-after-ms
// (OpenAI), then Retry-After in seconds or as an HTTP date.
func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// backoff is lo·2^attempt, capped at hi. There is no jitter: a 429 comes
// with Retry-After from both providers, which spreads clients itself.
func backoff(attempt int, lo, hi time.Duration) time.Duration {
	d := lo
	for range attempt {
		d *= 2
		if d >= hi {
			return hi
		}
	}
	return min(d, hi)
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
