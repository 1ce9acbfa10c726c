package llm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// response is one scripted answer of a fake provider endpoint.
type response struct {
	status int
	header map[string]string
	body   string
	// hangup closes the connection without an answer.
	hangup bool
	// block waits until the request's context is done (the client gave up).
	block bool
}

// request is what the fake received.
type request struct {
	header http.Header
	body   map[string]any
}

// fakeProvider is an httptest server for one endpoint that answers from a
// script and records the requests, so the real clients run against it.
type fakeProvider struct {
	t         *testing.T
	method    string
	path      string
	mu        sync.Mutex
	responses []response
	requests  []request
	received  chan struct{}
	srv       *httptest.Server
}

// newFakeProvider serves route, a path that takes POST requests with a
// JSON body, or "GET /path".
func newFakeProvider(t *testing.T, route string, responses ...response) *fakeProvider {
	t.Helper()
	method, path, ok := strings.Cut(route, " ")
	if !ok {
		method, path = http.MethodPost, route
	}
	f := &fakeProvider{t: t, method: method, path: path, responses: responses, received: make(chan struct{}, 100)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProvider) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != f.method || r.URL.Path != f.path {
		f.t.Errorf("fake provider: %s %s, want %s %s", r.Method, r.URL.Path, f.method, f.path)
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("fake provider: read body: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil && r.Method == http.MethodPost {
		f.t.Errorf("fake provider: body is not JSON: %v\n%s", err, raw)
	}
	f.mu.Lock()
	f.requests = append(f.requests, request{header: r.Header.Clone(), body: body})
	var resp response
	ok := len(f.responses) > 0
	if ok {
		resp, f.responses = f.responses[0], f.responses[1:]
	}
	f.mu.Unlock()
	f.received <- struct{}{}
	switch {
	case !ok:
		f.t.Errorf("fake provider: request %d has no scripted response", len(f.requests))
		http.Error(w, `{"error":{"message":"no scripted response"}}`, http.StatusInternalServerError)
	case resp.hangup:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			f.t.Errorf("fake provider: hijack: %v", err)
			return
		}
		conn.Close()
	case resp.block:
		<-r.Context().Done()
	default:
		for k, v := range resp.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.status)
		io.WriteString(w, resp.body)
	}
}

// Requests returns the recorded requests.
func (f *fakeProvider) Requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.requests...)
}

// sleeper records the waits between retries without waiting.
type sleeper struct {
	mu     sync.Mutex
	sleeps []time.Duration
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sleeps = append(s.sleeps, d)
	return ctx.Err()
}

func (s *sleeper) Sleeps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.sleeps...)
}

// noEnv is a Getenv that sees an empty environment.
func noEnv(string) string { return "" }
