package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/internal/logattr"
)

// Options configure a provider model. The zero value works with the
// provider's environment variables and the embedded price table.
type Options struct {
	// APIKey overrides the provider's key variable (OPENAI_API_KEY,
	// ANTHROPIC_API_KEY).
	APIKey string
	// BaseURL overrides the provider's base URL variable
	// (OPENAI_BASE_URL, ANTHROPIC_BASE_URL), e.g. a vLLM server.
	BaseURL string
	// TextMode sends no tools: the agent's Env parses one bash block per
	// reply instead (DESIGN.md §6).
	TextMode bool
	// MaxOutputTokens bounds each reply; 0 leaves OpenAI-compatible
	// servers their default and gives Anthropic DefaultAnthropicMaxTokens.
	MaxOutputTokens int64
	// Prices override and extend the embedded table, keyed
	// "provider/model" (the configuration's prices map).
	Prices map[string]Price
	// AllowUnpriced lets a model without a price run at cost 0 (then
	// Unpriced reports true and budgets count tokens).
	AllowUnpriced bool
	// MaxRetries is how often a transient failure is retried (default
	// DefaultMaxRetries; negative: never).
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// retries when the provider gives no Retry-After (defaults 1s, 60s).
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After honoured; a provider asking
	// for longer fails the query (default 5m).
	MaxRetryAfter time.Duration
	// RequestTimeout bounds one HTTP request (default 10m); a deadline of
	// Query's context (the run's time limit) bounds it further.
	RequestTimeout time.Duration
	// HTTPClient replaces the SDK's HTTP client.
	HTTPClient *http.Client
	// Sleep waits between retries; tests inject one that does not wait.
	// It must return early with ctx's error when ctx is done.
	Sleep func(ctx context.Context, d time.Duration) error
	// Getenv reads the provider variables (default os.Getenv).
	Getenv func(string) string
	// Logger receives retry warnings (default: discard).
	Logger *slog.Logger
	// OnError, when set, is told of every failed provider call, retried
	// or not (not of calls ended by ctx), e.g. to count them in
	// agentfix_model_errors_total.
	OnError func(err error)
}

// Defaults of Options.
const (
	DefaultMaxRetries         = 6
	DefaultMinBackoff         = time.Second
	DefaultMaxBackoff         = time.Minute
	DefaultMaxRetryAfter      = 5 * time.Minute
	DefaultRequestTimeout     = 10 * time.Minute
	DefaultAnthropicMaxTokens = 16384
)

// backend is one provider's API: one request, with errors turned into
// *callError so Model can decide about retries.
type backend interface {
	query(ctx context.Context, messages []agent.Message, tools []agent.ToolSpec) (agent.Reply, error)
	// check makes the cheapest request that needs a valid key.
	check(ctx context.Context) error
	// endpoint returns the base URL requests go to and the variable
	// that holds the key, for error messages.
	endpoint() (baseURL, keyVar string)
	// maxOutputTokens is the reply limit each request sends, 0 when the
	// server keeps its own default.
	maxOutputTokens() int64
}

// Model is an agent.Model backed by a provider API. It is safe for
// concurrent use.
type Model struct {
	name     string
	backend  backend
	price    Price
	unpriced bool
	textMode bool
	opts     Options
	log      *slog.Logger
}

// New returns the model named "provider/model" (e.g. "openai/gpt-5",
// "anthropic/claude-sonnet-4-5"). Providers: openai (any OpenAI-compatible
// server through a base URL) and anthropic. A model missing from the price
// table is an error unless opts.AllowUnpriced.
func New(name string, opts Options) (*Model, error) {
	constructors := map[string]func(model string, o Options) (backend, error){
		"openai":    newOpenAI,
		"anthropic": newAnthropic,
	}
	provider, model, ok := strings.Cut(name, "/")
	newBackend, known := constructors[provider]
	if !ok || model == "" || !known {
		valid := make([]string, 0, len(constructors))
		for p := range constructors {
			valid = append(valid, p+"/MODEL")
		}
		sort.Strings(valid)
		return nil, fmt.Errorf("model %q: want provider/model with provider one of %s", name, strings.Join(valid, ", "))
	}
	o := opts.withDefaults()
	table, err := DefaultPrices()
	if err != nil {
		return nil, err
	}
	price, found, err := lookup(name, table, o.Prices)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", name, err)
	}
	if !found && !o.AllowUnpriced {
		return nil, unpricedError(name, provider, table)
	}
	b, err := newBackend(model, o)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", name, err)
	}
	return &Model{name: name, backend: b, price: price, unpriced: !found, textMode: o.TextMode, opts: o,
		log: o.Logger.With(logattr.Model, name)}, nil
}

func (o Options) withDefaults() Options {
	if o.MaxRetries == 0 {
		o.MaxRetries = DefaultMaxRetries
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Name returns "provider/model" as configured.
func (m *Model) Name() string { return m.name }

// TextMode reports whether the model runs in text mode (no tools sent).
func (m *Model) TextMode() bool { return m.textMode }

// Unpriced reports whether the model has no price: its replies cost 0 and
// budgets must count tokens.
func (m *Model) Unpriced() bool { return m.unpriced }

// Price returns the model's price (zero when unpriced).
func (m *Model) Price() Price { return m.price }

// MaxOutputTokens returns the reply limit each query sends: the option,
// or DefaultAnthropicMaxTokens for Anthropic; 0 when an OpenAI-compatible
// server keeps its own default.
func (m *Model) MaxOutputTokens() int64 { return m.backend.maxOutputTokens() }

// Query sends the history (and the tools, unless in text mode), retrying
// transient failures, and prices the reply.
func (m *Model) Query(ctx context.Context, messages []agent.Message, tools []agent.ToolSpec) (agent.Reply, error) {
	if m.textMode {
		tools = nil
	}
	var reply agent.Reply
	err := m.retry(ctx, func(ctx context.Context) error {
		var err error
		reply, err = m.backend.query(ctx, messages, tools)
		return err
	})
	if err != nil {
		return agent.Reply{}, err
	}
	reply.CostUSD = m.price.Cost(reply.Usage)
	return reply, nil
}

// Check proves that the provider answers at its base URL and accepts the
// key, with the cheapest authenticated request (listing models), retrying
// transient failures like Query; meant for startup. A refused key is an
// *AuthError naming the key's variable, the base URL and the status.
func (m *Model) Check(ctx context.Context) error {
	err := m.retry(ctx, m.backend.check)
	var ae *AuthError
	if err == nil || errors.As(err, &ae) {
		return err
	}
	base, _ := m.backend.endpoint()
	return fmt.Errorf("check model %s at %s: %w", m.name, base, err)
}

// retry makes call until it succeeds or fails for good: a refused key (an
// *AuthError), a refused request, a prompt too long for the context window
// (wrapping agent.ErrContextExceeded), retries used up, a wait longer than
// MaxRetryAfter or one that would end after ctx's deadline, or ctx done.
func (m *Model) retry(ctx context.Context, call func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		err := call(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		if m.opts.OnError != nil {
			m.opts.OnError(err)
		}
		var ce *callError
		switch {
		case !errors.As(err, &ce):
			return err
		case ce.refusedKey():
			base, keyVar := m.backend.endpoint()
			ae := &AuthError{Provider: ce.provider, BaseURL: base, Status: ce.status, KeyVariable: keyVar, Message: ce.message}
			m.log.Error("the model provider refused the credentials", logattr.Status, ce.status, logattr.Err, ae)
			return ae
		case ce.contextExceeded:
			return fmt.Errorf("%w: %w", ce, agent.ErrContextExceeded)
		case !ce.retryable():
			return ce
		case attempt >= m.opts.MaxRetries:
			return fmt.Errorf("%w (gave up after %d attempts)", ce, attempt+1)
		}
		wait := backoff(attempt, m.opts.MinBackoff, m.opts.MaxBackoff)
		if ce.retryAfter > 0 {
			wait = ce.retryAfter
		}
		if wait > m.opts.MaxRetryAfter {
			return fmt.Errorf("%w (asks to retry after %s, longer than %s)", ce, wait, m.opts.MaxRetryAfter)
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return fmt.Errorf("%w (no retry: the deadline comes before a retry in %s)", ce, wait)
		}
		m.log.Warn("model call failed; retrying", logattr.Attempt, attempt+1, logattr.Wait, wait,
			logattr.Status, ce.status, logattr.Err, ce)
		if err := m.opts.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("%w (retry wait interrupted: %w)", ce, err)
		}
	}
}

var _ agent.Model = (*Model)(nil)
