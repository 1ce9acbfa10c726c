package ghapp

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v66/github"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultAPIURL is GitHub's REST base URL.
const DefaultAPIURL = "https://api.github.com/"

// defaultResponseHeaderTimeout bounds the wait for an answer's headers on
// the default transport.
const defaultResponseHeaderTimeout = time.Minute

// defaultMinTokenValidity is how long a token from App.Token stays valid at
// least, unless GitHub issues shorter ones.
const defaultMinTokenValidity = 10 * time.Minute

// Options configure an App. AppID and PrivateKey are required.
type Options struct {
	// AppID is the GitHub App's numeric id.
	AppID int64
	// PrivateKey is the App's private key, PEM encoded (PKCS#1 or PKCS#8).
	PrivateKey []byte
	// APIURL is the REST base URL: DefaultAPIURL when empty,
	// https://HOST/api/v3/ for GitHub Enterprise Server, or a test fake's URL;
	// any path is kept as is.
	APIURL string
	// Transport sends the requests (default: a clone of
	// http.DefaultTransport that waits at most a minute for an answer's
	// headers). Deadlines of whole calls come from their contexts.
	Transport http.RoundTripper
	// UserAgent is sent with every request (default "agentfix").
	UserAgent string
	// Logger receives retries and cache events (default: discarded).
	Logger *slog.Logger
	// Registerer, when set, receives the App's metrics
	// agentfix_github_requests_total{status} and
	// agentfix_github_rate_limit_remaining.
	Registerer prometheus.Registerer
	// Retry bounds retries; zero fields take the defaults.
	Retry RetryOptions
	// MinTokenValidity is how long a token returned by App.Token stays valid
	// at least (default 10m); a cached token closer to its expiry is
	// replaced.
	MinTokenValidity time.Duration
	// Sleep waits between attempts (default: a timer that ends early when
	// ctx is done). Tests inject one that records the waits.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for rate limit resets and token validity (default
	// time.Now).
	Now func() time.Time
}

// App is a GitHub App: its JWT-authenticated client, and the clients and
// tokens of its installations, created on first use and cached. Its
// methods are safe for concurrent use.
type App struct {
	id       int64
	key      *rsa.PrivateKey
	apiURL   *url.URL
	gqlURL   *url.URL // the GraphQL endpoint, derived from apiURL
	ua       string
	log      *slog.Logger
	policy   *retryPolicy
	meter    *meter
	minValid time.Duration
	gh       *github.Client // authenticated as the App (JWT)

	mu       sync.Mutex
	clients  map[int64]*Client
	tokens   map[tokenKey]*tokenSource
	identity *Identity
}

// New validates opts and returns an App. It makes no network call.
func New(opts Options) (*App, error) {
	if opts.AppID <= 0 {
		return nil, fmt.Errorf("github app: app id must be positive, got %d", opts.AppID)
	}
	if len(opts.PrivateKey) == 0 {
		return nil, errors.New("github app: private key is empty")
	}
	key, err := jwt.ParseRSAPrivateKeyFromPEM(opts.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("github app: parse private key: %w", err)
	}
	apiURL, err := parseAPIURL(opts.APIURL)
	if err != nil {
		return nil, err
	}
	base := opts.Transport
	if base == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = defaultResponseHeaderTimeout
		base = tr
	}
	m, err := newMeter(base, opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("github app: register metrics: %w", err)
	}
	a := &App{
		id:       opts.AppID,
		key:      key,
		apiURL:   apiURL,
		gqlURL:   graphQLURL(apiURL),
		ua:       cmpOr(opts.UserAgent, "agentfix"),
		log:      opts.Logger,
		meter:    m,
		minValid: cmpOr(opts.MinTokenValidity, defaultMinTokenValidity),
		clients:  map[int64]*Client{},
		tokens:   map[tokenKey]*tokenSource{},
		policy: &retryPolicy{
			maxAttempts: cmpOr(opts.Retry.MaxAttempts, defaultMaxAttempts),
			baseDelay:   cmpOr(opts.Retry.BaseDelay, defaultBaseDelay),
			maxDelay:    cmpOr(opts.Retry.MaxDelay, defaultMaxDelay),
			maxWait:     cmpOr(opts.Retry.MaxRateLimitWait, defaultMaxRateLimitWait),
			sleep:       opts.Sleep,
			now:         opts.Now,
		},
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.policy.sleep == nil {
		a.policy.sleep = sleepContext
	}
	if a.policy.now == nil {
		a.policy.now = time.Now
	}
	a.gh = a.newGitHub(a.appsTransport())
	return a, nil
}

// parseAPIURL checks the REST base URL and gives it the trailing slash
// go-github needs.
func parseAPIURL(raw string) (*url.URL, error) {
	if raw == "" {
		raw = DefaultAPIURL
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("github app: api url %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("github app: api url %q must be http(s)://host[/path/] without credentials, query or fragment", raw)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u, nil
}

// cmpOr returns v, or def when v is the zero value.
func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// ID returns the App's id.
func (a *App) ID() int64 { return a.id }

// appsTransport returns a transport authenticating as the App. Each
// installation gets its own: ghinstallation writes to the AppsTransport it
// refreshes tokens with, which must therefore not be shared.
func (a *App) appsTransport() *ghinstallation.AppsTransport {
	atr := ghinstallation.NewAppsTransportFromPrivateKey(a.meter, a.id, a.key)
	atr.BaseURL = strings.TrimSuffix(a.apiURL.String(), "/")
	return atr
}

// installationTransport returns a transport authenticating as installation
// id, with tokens limited by scope (nil: every repository the installation
// may access).
func (a *App) installationTransport(id int64, scope *github.InstallationTokenOptions) *ghinstallation.Transport {
	itr := ghinstallation.NewFromAppsTransport(a.appsTransport(), id)
	itr.BaseURL = strings.TrimSuffix(a.apiURL.String(), "/")
	itr.InstallationTokenOptions = scope
	return itr
}

// newGitHub returns a go-github client on the App's API URL whose requests
// go through auth, then the retrier above it.
func (a *App) newGitHub(auth http.RoundTripper) *github.Client {
	gh := github.NewClient(&http.Client{Transport: &retrier{next: auth, policy: a.policy, log: a.log}})
	u := *a.apiURL
	gh.BaseURL = &u
	gh.UserAgent = a.ua
	return gh
}

// Installation returns the Client of installation id, authenticated with
// installation tokens for every repository the installation may access. The
// Client is cached until Forget.
func (a *App) Installation(id int64) (*Client, error) {
	if id <= 0 {
		return nil, fmt.Errorf("github installation id must be positive, got %d", id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.clients[id]; ok {
		return c, nil
	}
	c := &Client{app: a, id: id, gh: a.newGitHub(a.installationTransport(id, nil))}
	a.clients[id] = c
	return c, nil
}

// Forget drops the cached Client and tokens of installation id, for an
// installation that was deleted or suspended. Clients already handed out
// keep working until their token expires or is revoked.
func (a *App) Forget(id int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.clients, id)
	for k := range a.tokens {
		if k.installation == id {
			delete(a.tokens, k)
		}
	}
}

// Identity is who the App is on GitHub.
type Identity struct {
	ID      int64
	Slug    string
	Name    string
	HTMLURL string
	// BotLogin is the login its installations act as: "<slug>[bot]".
	BotLogin string
}

// Identity returns the App's identity (GET /app), fetched once and cached.
func (a *App) Identity(ctx context.Context) (Identity, error) {
	a.mu.Lock()
	if a.identity != nil {
		defer a.mu.Unlock()
		return *a.identity, nil
	}
	a.mu.Unlock()
	app, _, err := a.gh.Apps.Get(ctx, "")
	if err != nil {
		return Identity{}, fmt.Errorf("get app %d: %w", a.id, apiError(err))
	}
	if app.GetSlug() == "" {
		return Identity{}, fmt.Errorf("get app %d: answer has no slug", a.id)
	}
	id := Identity{
		ID:       app.GetID(),
		Slug:     app.GetSlug(),
		Name:     app.GetName(),
		HTMLURL:  app.GetHTMLURL(),
		BotLogin: app.GetSlug() + "[bot]",
	}
	a.mu.Lock()
	a.identity = &id
	a.mu.Unlock()
	return id, nil
}
