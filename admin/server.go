package admin

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/runs"
)

// RunReader is what the pages need of the run records; *runs.Store
// implements it. Get returns an error wrapping runs.ErrNotFound for a run
// that does not exist or expired; List returns the newest runs first.
type RunReader interface {
	Get(ctx context.Context, id string) (runs.Record, error)
	List(ctx context.Context, limit int) ([]runs.Meta, error)
	Retention() time.Duration
}

// Options are the dependencies of a Server.
type Options struct {
	// Token is AGENTFIX_ADMIN_TOKEN; when empty the /admin routes are not
	// mounted at all.
	Token string
	// LinkKey verifies signed run links (runs.LinkKey of the webhook
	// secret); when empty /runs/{run_id} is not mounted.
	LinkKey []byte
	// Runs reads the run records. Required.
	Runs RunReader
	// Redis is the process's connection to the queues' Redis, which the
	// tasks and queues pages read (and never close). Required with a Token.
	Redis redis.UniversalClient
	// Queues are the bot's asynq queues: the tasks page lists their tasks,
	// each linked to the run its delivery started, and the queues page
	// shows them first. Required with a Token.
	Queues []string
	// PublicURL is AGENTFIX_PUBLIC_URL; an https URL makes the session
	// cookie Secure even when TLS ends at a proxy.
	PublicURL string
	// GitHubWebURL is AGENTFIX_GITHUB_WEB_URL, for links to issues and
	// pull requests; none are made when it is empty.
	GitHubWebURL string
	// Logger receives failed logins and errors reading runs. Required.
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Server serves the admin views and the signed run pages.
type Server struct {
	token     string
	linkKey   []byte
	runs      RunReader
	rdb       redis.UniversalClient
	queues    []string
	secureURL bool
	webURL    string
	log       *slog.Logger
	now       func() time.Time
	pages     *pages
}

// New returns the server for o.
func New(o Options) (*Server, error) {
	switch {
	case o.Runs == nil || o.Logger == nil:
		return nil, errors.New("admin: Runs and Logger are required")
	case o.Token != "" && o.Redis == nil:
		return nil, errors.New("admin: Redis is required for the tasks and queues pages")
	case o.Token != "" && len(o.Queues) == 0:
		return nil, errors.New("admin: Queues are required for the tasks page")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	webURL := ""
	if o.GitHubWebURL != "" {
		u, err := url.Parse(o.GitHubWebURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, errors.New("admin: GitHubWebURL is not an http(s) URL")
		}
		webURL = strings.TrimRight(o.GitHubWebURL, "/") + "/"
	}
	p, err := newPages()
	if err != nil {
		return nil, err
	}
	return &Server{
		token:     o.Token,
		linkKey:   o.LinkKey,
		runs:      o.Runs,
		rdb:       o.Redis,
		queues:    o.Queues,
		secureURL: strings.HasPrefix(o.PublicURL, "https://"),
		webURL:    webURL,
		log:       o.Logger,
		now:       o.Now,
		pages:     p,
	}, nil
}

// Routes mounts the signed run page on r when a link key is configured,
// and the /admin routes when a token is.
func (s *Server) Routes(r chi.Router) {
	if len(s.linkKey) > 0 {
		r.Get("/runs/{run_id}", s.signedRun)
	}
	if s.token == "" {
		return
	}
	r.Route("/admin", func(r chi.Router) {
		r.Get("/login", s.loginForm)
		r.Post("/login", s.login)
		r.Post("/logout", s.logout)
		r.Group(func(r chi.Router) {
			r.Use(s.requireToken)
			r.Get("/", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/admin/runs", http.StatusFound)
			})
			r.Get("/runs", s.runList)
			r.Get("/runs/{run_id}", s.adminRun)
			r.Get("/tasks", s.taskList)
			r.Get("/queues", s.queueList)
			r.NotFound(func(w http.ResponseWriter, r *http.Request) {
				s.message(w, r, http.StatusNotFound, "Not found", "There is no admin page at "+r.URL.Path+".")
			})
		})
	})
}
