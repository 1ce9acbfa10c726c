package ghapp

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	template "github.com/DataDog/datadog-agent/pkg/template/html"
	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v66/github"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/internal/logattr"
)

// convertTimeout bounds the exchange of a manifest code. It runs detached
// from the request: a browser that goes away must not leave GitHub's
// single-use code spent and the credentials unsaved.
const convertTimeout = 30 * time.Second

// maxAppName is GitHub's limit on an App's name.
const maxAppName = 34

// maxFormBytes bounds the body of the /setup form.
const maxFormBytes = 64 << 10

// orgLogin is the form of a GitHub organization login.
var orgLogin = regexp.MustCompile(`^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$`)

// manifestCode is the form of a code GitHub hands back; it goes into a URL
// path.
var manifestCode = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// SetupOptions configure the /setup flow. WebURL, APIURL and Dir are
// required.
type SetupOptions struct {
	// WebURL is GitHub's web base URL (AGENTFIX_GITHUB_WEB_URL); the
	// manifest is posted to it.
	WebURL string
	// APIURL is the REST base URL (AGENTFIX_GITHUB_API_URL) on which the
	// code GitHub hands back is exchanged for the App's credentials.
	APIURL string
	// PublicURL is the bot's public base URL (AGENTFIX_PUBLIC_URL). When
	// empty, each request's own address is used (see Setup).
	PublicURL string
	// Dir is the working directory: .env and the private key file are
	// written there.
	Dir string
	// TriggerLabel and Command are named on the last page.
	TriggerLabel, Command string
	// Transport sends the exchange request (default: a clone of
	// http.DefaultTransport).
	Transport http.RoundTripper
	// Logger receives the outcome of each step (default: discarded).
	Logger *slog.Logger
	// Rand supplies the states and the default name's suffix; it must be
	// safe for concurrent use (default crypto/rand).
	Rand io.Reader
	// Now is the clock of state expiry (default time.Now).
	Now func() time.Time
}

// Setup is the three-click App creation of setup mode (GitHub's manifest
// flow), served on GET and POST /setup and GET /setup/callback:
//
//  1. GET /setup shows a form: the App's name (agentfix-<random> by
//     default), a personal account or an organization, and the optional
//     permissions (members: read, workflows: write, actions: write; all
//     off by default, as the bot works without them, workflows: write lets
//     the bot's branches change CI that runs with the repository's secrets,
//     and actions: write lets it re-run jobs).
//  2. POST /setup (same origin only) shows the manifest and a button that
//     posts it to GitHub's "new App" page of that account, with a fresh
//     state: 32 random bytes, also set as an HttpOnly, SameSite=Lax cookie
//     limited to /setup/callback, valid once, for 30 minutes.
//  3. GitHub creates the App and redirects to /setup/callback?code&state.
//     The state must match the cookie and be one this process issued and
//     not used; then the code is exchanged once (POST
//     /app-manifests/{code}/conversions, unauthenticated), the private key
//     written next to .env (mode 0600, never over an existing file), and
//     AGENTFIX_APP_ID, AGENTFIX_PRIVATE_KEY_FILE and AGENTFIX_WEBHOOK_SECRET
//     merged into .env (mode 0600, other lines kept, replaced atomically).
//
// The page then asks for a restart rather than reloading the process: the
// process was wired at startup for setup mode (no webhook edge, no
// workers), and supervisors — systemd, Docker, Kubernetes, make run — expect
// to own its lifecycle. After the restart config loads .env, the bot is no
// longer in setup mode, and /setup does not exist. Until then this Setup
// refuses a second App.
//
// The bot's public address (the App's homepage, webhook URL and redirect
// URL) is SetupOptions.PublicURL, or else the address the browser used:
// the request's Host and TLS state, with a proxy's X-Forwarded-Proto and
// X-Forwarded-Host honoured only when the request comes from a loopback
// address — a tunnel agent (cloudflared, ngrok) or reverse proxy on the same
// machine. Behind a proxy elsewhere, set AGENTFIX_PUBLIC_URL.
type Setup struct {
	webURL    *url.URL
	apiURL    *url.URL
	publicURL string
	dir       string
	label     string
	command   string
	client    *http.Client
	log       *slog.Logger
	rand      io.Reader
	states    *states
	pages     *template.Template
	mux       *http.ServeMux

	mu      sync.Mutex
	busy    bool        // a code is being exchanged
	created *createdApp // the App this process created
}

// createdApp is what the last page shows.
type createdApp struct {
	ID               int64
	Name, Slug, HTML string
	KeyFile          string
}

// NewSetup returns the /setup flow. It makes no network call.
func NewSetup(o SetupOptions) (*Setup, error) {
	web, err := url.Parse(o.WebURL)
	if err != nil || (web.Scheme != "http" && web.Scheme != "https") || web.Host == "" {
		return nil, fmt.Errorf("setup: web url %q must be an http(s) URL", o.WebURL)
	}
	if !strings.HasSuffix(web.Path, "/") {
		web.Path += "/"
	}
	api, err := parseAPIURL(o.APIURL)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	if o.Dir == "" {
		return nil, errors.New("setup: the working directory is required")
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	tr := o.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = convertTimeout
		tr = t
	}
	s := &Setup{
		webURL:    web,
		apiURL:    api,
		publicURL: strings.TrimRight(o.PublicURL, "/"),
		dir:       o.Dir,
		label:     o.TriggerLabel,
		command:   o.Command,
		client:    &http.Client{Transport: tr},
		log:       o.Logger,
		rand:      o.Rand,
		pages:     pages,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.rand == nil {
		s.rand = crand.Reader
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	s.states = newStates(s.rand, now)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /setup", s.serveForm)
	s.mux.Handle("POST /setup", http.NewCrossOriginProtection().Handler(http.HandlerFunc(s.serveReview)))
	s.mux.HandleFunc("GET /setup/callback", s.serveCallback)
	return s, nil
}

// ServeHTTP serves /setup and /setup/callback; anything else is 404.
func (s *Setup) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	s.mux.ServeHTTP(w, r)
}

// serveForm shows the choices, or, once the App is created, that a restart
// is due.
func (s *Setup) serveForm(w http.ResponseWriter, r *http.Request) {
	if app := s.createdApp(); app != nil {
		s.finished(w, http.StatusOK, app)
		return
	}
	suffix := make([]byte, 3)
	if _, err := io.ReadFull(s.rand, suffix); err != nil {
		s.fail(w, http.StatusInternalServerError, "Setup failed", fmt.Sprintf("random name: %v", err), false)
		return
	}
	s.showForm(w, r, http.StatusOK, choices{Name: fmt.Sprintf("agentfix-%x", suffix), Owner: ownerPersonal}, "")
}

// serveReview checks the choices and shows the manifest with the button
// that posts it to GitHub.
func (s *Setup) serveReview(w http.ResponseWriter, r *http.Request) {
	if app := s.createdApp(); app != nil {
		s.finished(w, http.StatusConflict, app)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.fail(w, http.StatusBadRequest, "Bad form", "The form could not be read: "+err.Error(), true)
		return
	}
	c := readChoices(r.PostForm)
	if msg := c.check(); msg != "" {
		s.showForm(w, r, http.StatusBadRequest, c, msg)
		return
	}
	if err := checkCanSave(s.dir); err != nil {
		s.showForm(w, r, http.StatusInternalServerError, c, "agentfix could not save the App's credentials: "+err.Error()+". Fix that before creating the App.")
		return
	}
	base, browser, err := s.bases(r)
	if err != nil {
		s.fail(w, http.StatusBadRequest, "Bad request", err.Error(), false)
		return
	}
	manifest, err := newManifest(manifestOptions{Name: c.Name, BaseURL: base, Members: c.Members, Workflows: c.Workflows, Actions: c.Actions}).encode()
	if err != nil {
		s.fail(w, http.StatusInternalServerError, "Setup failed", err.Error(), true)
		return
	}
	state, err := s.states.mint()
	if err != nil {
		s.fail(w, http.StatusInternalServerError, "Setup failed", err.Error(), true)
		return
	}
	action := *s.webURL
	owner := "your personal account"
	action.Path += "settings/apps/new"
	if c.Owner == ownerOrg {
		owner = "the organization " + c.Org
		action.Path = s.webURL.Path + "organizations/" + c.Org + "/settings/apps/new"
	}
	action.RawQuery = url.Values{"state": {state}}.Encode()
	setStateCookie(w, state, strings.HasPrefix(browser, "https:"))
	s.log.Info("setup: manifest ready for " + owner + ", webhook " + base + "/webhook")
	s.render(w, http.StatusOK, "review", reviewPage{
		Manifest:  string(manifest),
		ActionURL: action.String(),
		Owner:     owner,
		WebHost:   s.webURL.Host,
		Expires:   fmt.Sprintf("%d minutes", int(stateTTL/time.Minute)),
	})
}

// serveCallback checks the state, exchanges the code and saves the
// credentials.
func (s *Setup) serveCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	code, state := q.Get("code"), q.Get("state")
	if code == "" || state == "" {
		s.log.Warn("setup: callback without code or state")
		s.fail(w, http.StatusBadRequest, "Setup refused", "GitHub's redirect must carry a code and a state parameter; this one lacks one.", true)
		return
	}
	var cookie string
	if c, err := r.Cookie(stateCookie); err == nil {
		cookie = c.Value
	}
	if err := s.states.take(state, cookie); err != nil {
		s.log.Warn("setup: callback refused", logattr.Reason, err.Error())
		s.fail(w, http.StatusForbidden, "Setup refused", "This callback is refused: "+err.Error()+". Nothing was saved.", true)
		return
	}
	_, browser, _ := s.bases(r)
	clearStateCookie(w, strings.HasPrefix(browser, "https:"))
	if !manifestCode.MatchString(code) {
		s.fail(w, http.StatusBadRequest, "Setup refused", "The code parameter is malformed. Nothing was saved.", true)
		return
	}
	if !s.begin(w) {
		return
	}
	app, err := s.finish(r.Context(), code)
	s.end(app)
	if err != nil {
		var fe *finishError
		if errors.As(err, &fe) {
			s.log.Error("setup: "+fe.log, logattr.Err, err)
			s.fail(w, fe.status, "Setup failed", fe.msg, fe.again, fe.lines...)
			return
		}
		s.log.Error("setup failed", logattr.Err, err)
		s.fail(w, http.StatusInternalServerError, "Setup failed", err.Error(), true)
		return
	}
	s.log.Info("setup: github app "+app.Slug+" created and its credentials saved", logattr.AppID, app.ID, logattr.File, filepath.Join(s.dir, config.DotEnvFile))
	s.log.Warn("setup finished: restart agentfix to leave setup mode")
	s.render(w, http.StatusOK, "done", donePage{
		AppName: app.Name, AppID: app.ID, AppURL: app.HTML, InstallURL: strings.TrimRight(app.HTML, "/") + "/installations/new",
		EnvFile: config.DotEnvFile, KeyFile: app.KeyFile, Label: s.label, Command: s.command,
	})
}

// begin marks an exchange as running, or answers 409 when the App exists
// already or another exchange runs.
func (s *Setup) begin(w http.ResponseWriter) bool {
	s.mu.Lock()
	app, busy := s.created, s.busy
	if app == nil && !busy {
		s.busy = true
	}
	s.mu.Unlock()
	switch {
	case app != nil:
		s.finished(w, http.StatusConflict, app)
		return false
	case busy:
		s.fail(w, http.StatusConflict, "Setup refused", "Another App is being saved right now. Reload /setup in a moment.", false)
		return false
	}
	return true
}

// end records the outcome of an exchange begin allowed.
func (s *Setup) end(app *createdApp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy = false
	if app != nil && app.KeyFile != "" {
		s.created = app
	}
}

func (s *Setup) createdApp() *createdApp {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created
}

// finishError is a failed exchange or save, with what the page says.
type finishError struct {
	status int
	log    string
	msg    string
	lines  []string
	again  bool
	err    error
}

func (e *finishError) Error() string { return e.err.Error() }
func (e *finishError) Unwrap() error { return e.err }

// finish exchanges code for the App's credentials and saves them. It
// returns the App once GitHub created it, even when saving failed.
func (s *Setup) finish(ctx context.Context, code string) (*createdApp, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), convertTimeout)
	defer cancel()
	cfg, err := s.convert(ctx, code)
	if err != nil {
		msg := "GitHub did not hand over the App's credentials"
		if st := HTTPStatus(err); st != 0 {
			msg += fmt.Sprintf(" (%d %s)", st, http.StatusText(st))
		}
		if HTTPStatus(err) == http.StatusNotFound {
			msg += ": the code was used already or expired (codes last an hour)"
		}
		return nil, &finishError{status: http.StatusBadGateway, log: "code exchange failed", msg: msg + ". Nothing was saved.", again: true, err: err}
	}
	app := &createdApp{ID: cfg.GetID(), Name: cfg.GetName(), Slug: cfg.GetSlug(), HTML: cfg.GetHTMLURL()}
	manual := []string{
		fmt.Sprintf("The App exists on GitHub: %s (id %d). To finish by hand, generate a private key on its settings page and set a new webhook secret there, then set AGENTFIX_APP_ID, AGENTFIX_PRIVATE_KEY_FILE and AGENTFIX_WEBHOOK_SECRET (README, Configuration).", app.HTML, app.ID),
	}
	key, err := writeKeyFile(s.dir, app.Slug, []byte(cfg.GetPEM()))
	if err != nil {
		return app, &finishError{status: http.StatusInternalServerError, log: "save private key", msg: "The private key could not be saved: " + err.Error(), lines: manual, err: err}
	}
	vars := []envVar{
		{Key: "AGENTFIX_APP_ID", Value: fmt.Sprint(app.ID)},
		{Key: "AGENTFIX_PRIVATE_KEY_FILE", Value: key},
		{Key: "AGENTFIX_WEBHOOK_SECRET", Value: cfg.GetWebhookSecret()},
	}
	comment := fmt.Sprintf("GitHub App %s (%s), written by agentfix /setup", app.Slug, app.HTML)
	if err := updateDotEnv(filepath.Join(s.dir, config.DotEnvFile), vars, comment); err != nil {
		manual[0] = fmt.Sprintf("The App exists on GitHub: %s (id %d), and its private key is saved as %s. To finish by hand, set a new webhook secret on the App's settings page, then set AGENTFIX_APP_ID=%d, AGENTFIX_PRIVATE_KEY_FILE=%s and AGENTFIX_WEBHOOK_SECRET (README, Configuration).", app.HTML, app.ID, key, app.ID, key)
		return app, &finishError{status: http.StatusInternalServerError, log: "save .env", msg: ".env could not be updated: " + err.Error(), lines: manual, err: err}
	}
	app.KeyFile = key
	return app, nil
}

// convert exchanges a manifest code for the App's configuration. It is
// sent once, never retried: GitHub accepts a code once.
func (s *Setup) convert(ctx context.Context, code string) (*github.AppConfig, error) {
	gh := github.NewClient(s.client)
	u := *s.apiURL
	gh.BaseURL = &u
	gh.UserAgent = "agentfix"
	cfg, _, err := gh.Apps.CompleteAppManifest(ctx, code)
	if err != nil {
		return nil, fmt.Errorf("convert app manifest code: %w", apiError(err))
	}
	switch {
	case cfg.GetID() <= 0:
		return nil, errors.New("convert app manifest code: the answer has no app id")
	case cfg.GetWebhookSecret() == "":
		return nil, errors.New("convert app manifest code: the answer has no webhook secret")
	}
	if _, err := jwt.ParseRSAPrivateKeyFromPEM([]byte(cfg.GetPEM())); err != nil {
		return nil, fmt.Errorf("convert app manifest code: the answer's private key: %w", err)
	}
	return cfg, nil
}

// owner kinds of the form.
const (
	ownerPersonal = "personal"
	ownerOrg      = "org"
)

// choices are what the form asks.
type choices struct {
	Name, Owner, Org            string
	Members, Workflows, Actions bool
}

func readChoices(f url.Values) choices {
	return choices{
		Name:      strings.TrimSpace(f.Get("name")),
		Owner:     f.Get("owner"),
		Org:       strings.TrimSpace(f.Get("org")),
		Members:   f.Get("members") == "on",
		Workflows: f.Get("workflows") == "on",
		Actions:   f.Get("actions") == "on",
	}
}

// check returns what is wrong with the choices, for the form.
func (c choices) check() string {
	n := utf8.RuneCountInString(c.Name)
	switch {
	case n == 0:
		return "The App needs a name."
	case n > maxAppName:
		return fmt.Sprintf("The name has %d characters; GitHub allows at most %d.", n, maxAppName)
	case strings.IndexFunc(c.Name, unicode.IsControl) >= 0:
		return "The name may not contain control characters."
	case c.Owner != ownerPersonal && c.Owner != ownerOrg:
		return "Choose a personal account or an organization."
	case c.Owner == ownerOrg && c.Org == "":
		return "Name the organization."
	case c.Owner == ownerOrg && (len(c.Org) > 39 || !orgLogin.MatchString(c.Org)):
		return fmt.Sprintf("%q is not an organization login (letters, digits and single dashes, at most 39).", c.Org)
	}
	return ""
}
