package llm

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/agent"
)

// logRecorder is a slog.Handler that keeps the level and message of every
// record.
type logRecorder struct {
	mu      sync.Mutex
	records []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Level.String()+" "+r.Message)
	return nil
}

func (l *logRecorder) Records() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.records...)
}

// provider is one provider's fake endpoints and a model built on them.
type provider struct {
	server   string // the subtests' name
	name     string // the model name
	chat     string // the route of a query
	models   string // the route of Check
	keyVar   string
	base     func(f *fakeProvider) string // the base URL the model is given
	reply    string                       // a successful query's body
	list     string                       // a successful Check's body
	refusal  string                       // a 401 body
	keyField func(r request) string       // the key as the request carried it
}

var providers = []provider{
	{
		server: "openai", name: "openai/gpt-5", chat: "/v1/chat/completions", models: "GET /v1/models", keyVar: "OPENAI_API_KEY",
		base:     func(f *fakeProvider) string { return f.srv.URL + "/v1/" },
		reply:    completion("stop", `{"role":"assistant","content":"hi"}`),
		list:     `{"object":"list","data":[{"id":"gpt-5","object":"model","created":1,"owned_by":"openai"}]}`,
		refusal:  `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`,
		keyField: func(r request) string { return strings.TrimPrefix(r.header.Get("Authorization"), "Bearer ") },
	},
	{
		// vLLM's errors have no OpenAI envelope; a refused key is
		// {"error": "Unauthorized"}, which the SDK cannot decode.
		server: "vllm", name: "openai/gpt-5", chat: "/v1/chat/completions", models: "GET /v1/models", keyVar: "OPENAI_API_KEY",
		base:     func(f *fakeProvider) string { return f.srv.URL + "/v1" },
		reply:    completion("stop", `{"role":"assistant","content":"hi"}`),
		list:     `{"object":"list","data":[{"id":"gpt-5","object":"model","created":1,"owned_by":"vllm","root":"gpt-5","max_model_len":32768}]}`,
		refusal:  `{"error":"Unauthorized"}`,
		keyField: func(r request) string { return strings.TrimPrefix(r.header.Get("Authorization"), "Bearer ") },
	},
	{
		server: "anthropic", name: "anthropic/claude-sonnet-4-5", chat: "/v1/messages", models: "GET /v1/models", keyVar: "ANTHROPIC_API_KEY",
		base:     func(f *fakeProvider) string { return f.srv.URL },
		reply:    anthropicMessage("end_turn", `[{"type":"text","text":"hi"}]`),
		list:     `{"data":[{"id":"claude-sonnet-4-5","type":"model","display_name":"Claude Sonnet 4.5","created_at":"2025-09-29T00:00:00Z"}],"has_more":false,"first_id":"claude-sonnet-4-5","last_id":"claude-sonnet-4-5"}`,
		refusal:  `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
		keyField: func(r request) string { return r.header.Get("X-Api-Key") },
	},
}

func (p provider) model(t *testing.T, f *fakeProvider, s *sleeper, mutate ...func(*Options)) *Model {
	t.Helper()
	o := Options{APIKey: "test-key", BaseURL: p.base(f), Sleep: s.Sleep, Getenv: noEnv}
	for _, m := range mutate {
		m(&o)
	}
	m, err := New(p.name, o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRefusedKeyIsAnAuthErrorNeverRetried(t *testing.T) {
	for _, p := range providers {
		t.Run(p.server, func(t *testing.T) {
			f := newFakeProvider(t, p.chat, response{status: 401, body: p.refusal})
			s := &sleeper{}
			logs := &logRecorder{}
			m := p.model(t, f, s, func(o *Options) { o.Logger = slog.New(logs) })
			_, err := m.Query(context.Background(), testHistory, testTools)
			var ae *AuthError
			if !errors.As(err, &ae) {
				t.Fatalf("Query error = %v, want an *AuthError", err)
			}
			provider, _, _ := strings.Cut(p.name, "/")
			want := AuthError{Provider: provider, BaseURL: p.base(f), Status: 401, KeyVariable: p.keyVar}
			got := *ae
			got.Message = ""
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("auth error (-want +got):\n%s", diff)
			}
			if ae.Message == "" {
				t.Error("the auth error lost the provider's message")
			}
			if !errors.Is(err, agent.ErrModelAuth) {
				t.Error("the auth error does not wrap agent.ErrModelAuth")
			}
			if n := len(f.Requests()); n != 1 {
				t.Errorf("%d requests, want 1 (a refused key is never retried)", n)
			}
			if sl := s.Sleeps(); len(sl) != 0 {
				t.Errorf("slept %v before giving up, want no retry wait", sl)
			}
			if diff := cmp.Diff([]string{"ERROR the model provider refused the credentials"}, logs.Records()); diff != "" {
				t.Errorf("log records (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	for _, p := range providers {
		t.Run(p.server, func(t *testing.T) {
			t.Run("accepted", func(t *testing.T) {
				f := newFakeProvider(t, p.models, response{status: 200, body: p.list})
				if err := p.model(t, f, &sleeper{}).Check(context.Background()); err != nil {
					t.Fatalf("Check: %v", err)
				}
				reqs := f.Requests()
				if len(reqs) != 1 || p.keyField(reqs[0]) != "test-key" {
					t.Errorf("%d requests (key %q), want one that carries the key", len(reqs), p.keyField(reqs[0]))
				}
			})
			t.Run("refused", func(t *testing.T) {
				f := newFakeProvider(t, p.models, response{status: 401, body: p.refusal})
				err := p.model(t, f, &sleeper{}).Check(context.Background())
				var ae *AuthError
				if !errors.As(err, &ae) {
					t.Fatalf("Check error = %v, want an *AuthError", err)
				}
				for _, want := range []string{p.keyVar, p.base(f), "401 Unauthorized"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Check error %q does not name %q", err, want)
					}
				}
				if n := len(f.Requests()); n != 1 {
					t.Errorf("%d requests, want 1", n)
				}
			})
			t.Run("transient failure retried", func(t *testing.T) {
				f := newFakeProvider(t, p.models, response{status: 503, body: `{"error":{"message":"busy"}}`}, response{status: 200, body: p.list})
				s := &sleeper{}
				if err := p.model(t, f, s).Check(context.Background()); err != nil {
					t.Fatalf("Check: %v", err)
				}
				if diff := cmp.Diff([]time.Duration{time.Second}, s.Sleeps()); diff != "" {
					t.Errorf("sleeps (-want +got):\n%s", diff)
				}
			})
			t.Run("unreachable", func(t *testing.T) {
				f := newFakeProvider(t, p.models)
				base := p.base(f)
				f.srv.Close()
				err := p.model(t, f, &sleeper{}, func(o *Options) { o.MaxRetries = -1 }).Check(context.Background())
				if want := "check model " + p.name + " at " + base + ": "; err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Errorf("Check error = %v, want it to start with %q", err, want)
				}
			})
		})
	}
}

// deadlines records the deadline of every request's context.
type deadlines struct {
	mu  sync.Mutex
	got []time.Time
}

func (d *deadlines) RoundTrip(r *http.Request) (*http.Response, error) {
	dl, ok := r.Context().Deadline()
	if !ok {
		dl = time.Time{}
	}
	d.mu.Lock()
	d.got = append(d.got, dl)
	d.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func TestQueryHonoursTheDeadline(t *testing.T) {
	for _, p := range providers {
		t.Run(p.server, func(t *testing.T) {
			t.Run("each request is capped at the time left", func(t *testing.T) {
				f := newFakeProvider(t, p.chat, response{status: 200, body: p.reply})
				rec := &deadlines{}
				m := p.model(t, f, &sleeper{}, func(o *Options) { o.HTTPClient = &http.Client{Transport: rec} })
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // below the 10m request timeout
				defer cancel()
				if _, err := m.Query(ctx, testHistory, testTools); err != nil {
					t.Fatal(err)
				}
				limit, _ := ctx.Deadline()
				if len(rec.got) != 1 || rec.got[0].IsZero() || rec.got[0].After(limit) {
					t.Errorf("request deadlines %v, want one no later than the query's %v", rec.got, limit)
				}
			})
			t.Run("no retry wait past the deadline", func(t *testing.T) {
				f := newFakeProvider(t, p.chat, response{status: 429, header: map[string]string{"Retry-After": "120"}, body: `{"error":{"message":"slow down"}}`})
				s := &sleeper{}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, err := p.model(t, f, s).Query(ctx, testHistory, testTools)
				if want := "(no retry: the deadline comes before a retry in 2m0s)"; err == nil || !strings.HasSuffix(err.Error(), want) {
					t.Errorf("Query error = %v, want one ending in %q", err, want)
				}
				if sl := s.Sleeps(); len(sl) != 0 {
					t.Errorf("slept %v, want no wait that ends after the deadline", sl)
				}
			})
		})
	}
}
