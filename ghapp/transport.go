package ghapp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentfix/agentfix/internal/logattr"
)

type ctxKey int

// repeatableKey marks a POST as safe to send again after an ambiguous
// failure (see the package documentation).
const repeatableKey ctxKey = iota

// repeatable returns ctx marked so that a POST made with it is retried on
// 5xx answers and connection errors.
func repeatable(ctx context.Context) context.Context {
	return context.WithValue(ctx, repeatableKey, true)
}

// isRepeatable reports whether req may be sent again after GitHub possibly
// acted on it.
func isRepeatable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	if strings.HasSuffix(req.URL.Path, "/access_tokens") {
		return true
	}
	v, _ := req.Context().Value(repeatableKey).(bool)
	return v
}

// retrier is the http.RoundTripper under go-github that retries each
// request on its own, following a retryPolicy. It sits above the
// authenticating transport so that every attempt carries a current token.
type retrier struct {
	next   http.RoundTripper
	policy *retryPolicy
	log    *slog.Logger
}

// RoundTrip sends req, and sends it again while the policy says so. A
// request whose body cannot be replayed (no GetBody) is sent once.
func (r *retrier) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return r.next.RoundTrip(req)
	}
	rep := isRepeatable(req)
	for attempt := 1; ; attempt++ {
		areq := req.Clone(ctx)
		if attempt > 1 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			areq.Body = body
		}
		resp, err := r.next.RoundTrip(areq)
		v := r.policy.judge(ctx, attempt, rep, resp, err)
		if !v.retry {
			if v.err != nil {
				discard(resp, err)
				return nil, v.err
			}
			if resp != nil {
				hideExhaustedRate(resp)
			}
			return resp, err
		}
		status := statusOf(resp, err)
		discard(resp, err)
		r.log.LogAttrs(ctx, slog.LevelWarn, "github request retried",
			slog.String(logattr.Method, req.Method), slog.String(logattr.Path, req.URL.Path),
			slog.String(logattr.Status, status), slog.Int(logattr.Attempt, attempt),
			slog.Duration(logattr.Wait, v.wait), slog.String(logattr.Reason, v.reason))
		if err := r.policy.sleep(ctx, v.wait); err != nil {
			return nil, err
		}
	}
}

// hideExhaustedRate drops the rate limit headers of a successful answer that
// used the last request of the window. go-github would otherwise refuse
// every later call locally until the reset, bypassing the bounded wait;
// without them the next call reaches GitHub, gets the 403 with the reset
// time, and waits like any other rate limit. (The meter below has recorded
// them.)
func hideExhaustedRate(resp *http.Response) {
	if resp.StatusCode < 300 && resp.Header.Get("X-RateLimit-Remaining") == "0" {
		resp.Header.Del("X-RateLimit-Remaining")
		resp.Header.Del("X-RateLimit-Reset")
	}
}

// discard closes the body of an answer that will not be returned, including
// one carried by a failed token refresh.
func discard(resp *http.Response, err error) {
	var herr *ghinstallation.HTTPError
	if resp == nil && errors.As(err, &herr) {
		resp = herr.Response
	}
	if resp != nil && resp.Body != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		_ = resp.Body.Close()
	}
}

// statusOf names an attempt's outcome for logs and metrics.
func statusOf(resp *http.Response, err error) string {
	var herr *ghinstallation.HTTPError
	if resp == nil && errors.As(err, &herr) {
		resp = herr.Response
	}
	if resp == nil {
		return "error"
	}
	return strconv.Itoa(resp.StatusCode)
}

// meter is the bottom http.RoundTripper: it counts every request that
// reaches the network (API calls, retries and token refreshes alike) and
// records the rate limit GitHub reports.
type meter struct {
	next      http.RoundTripper
	requests  *prometheus.CounterVec
	remaining prometheus.Gauge
}

func newMeter(next http.RoundTripper, reg prometheus.Registerer) (*meter, error) {
	m := &meter{
		next: next,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentfix_github_requests_total",
			Help: "Requests sent to the GitHub API, by HTTP status (\"error\" when no answer came).",
		}, []string{"status"}),
		remaining: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "agentfix_github_rate_limit_remaining",
			Help: "Requests left in the current GitHub rate limit window, as last reported.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.remaining} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *meter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := m.next.RoundTrip(req)
	m.requests.WithLabelValues(statusOf(resp, err)).Inc()
	if resp != nil {
		if n, perr := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining")); perr == nil {
			m.remaining.Set(float64(n))
		}
	}
	return resp, err
}
