package webhook

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/jobs"
	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// MaxBodyBytes is the largest delivery accepted (GitHub caps payloads at
// 25 MiB).
const MaxBodyBytes = 25 << 20

// Queue is what the edge needs of the task queues; *jobs.Client implements
// it. The Submit methods return jobs.ErrDuplicate when the delivery's
// notice or cancel task exists already.
type Queue interface {
	SubmitFix(ctx context.Context, p jobs.FixIssue) (jobs.Outcome, error)
	SubmitRevise(ctx context.Context, p jobs.RevisePR) (jobs.Outcome, error)
	SubmitNotice(ctx context.Context, n jobs.Notice) error
	SubmitCancel(ctx context.Context, c jobs.Cancel) error
	// SubmitChecks and SubmitBaseMoved enqueue the tasks that look for an
	// automatic round (jobs/ci.go).
	SubmitChecks(ctx context.Context, p jobs.ChecksDone) error
	SubmitBaseMoved(ctx context.Context, p jobs.BaseMoved) error
}

// Options are the dependencies of a Server.
type Options struct {
	// Config supplies the webhook secret, the App id, the trigger label and
	// the command.
	Config *config.App
	// Redis holds the delivery claims and answers /readyz.
	Redis redis.UniversalClient
	// Queue receives the tasks of accepted deliveries.
	Queue Queue
	// Registry receives the edge's metrics and is served on /metrics.
	Registry *prometheus.Registry
	// Logger receives one record per delivery.
	Logger *slog.Logger
	// MaxInflightBytes bounds the memory of the bodies being read and
	// handled at once (each body's buffer, booked as its bytes arrive); 0
	// means DefaultMaxInflightBytes.
	MaxInflightBytes int64
	// MaxClientInflightBytes bounds what the requests of one client (one
	// remote address as the server sees it, an IPv6 /64) hold of that
	// budget together; 0 means a quarter of MaxInflightBytes. Behind a
	// proxy every request has the proxy's address and the share bounds
	// them all together: the proxy should then hold slow clients off itself
	// (buffering request bodies, as nginx does by default).
	MaxClientInflightBytes int64
	// BodyTimeout is how long a body may take to start arriving, and
	// BodyTimeoutPerMiB how much longer each MiB received gives it; a body
	// late on that pace is answered 408. 0 means DefaultBodyTimeout and
	// DefaultBodyTimeoutPerMiB.
	BodyTimeout, BodyTimeoutPerMiB time.Duration
}

// Server is the HTTP edge: POST /webhook, GET /healthz, /readyz and /metrics.
type Server struct {
	secret   []byte
	handlers map[string]eventHandler
	claims   claims
	inflight *inflight
	queue    Queue
	rdb      redis.UniversalClient
	registry *prometheus.Registry
	metrics  *metrics
	log      *slog.Logger

	// bodyTimeout and bodyTimeoutPerMiB make each body's deadline.
	bodyTimeout, bodyTimeoutPerMiB time.Duration
	noDeadline                     sync.Once // logs that deadlines cannot be set
}

// New returns the edge. It refuses an empty webhook secret: go-github's
// ValidatePayload would then accept unsigned requests, and /webhook is never
// served without a secret.
func New(o Options) (*Server, error) {
	switch {
	case o.Config == nil || o.Redis == nil || o.Queue == nil || o.Registry == nil || o.Logger == nil:
		return nil, errors.New("webhook: Config, Redis, Queue, Registry and Logger are required")
	case o.Config.WebhookSecret == "":
		return nil, errors.New("webhook: AGENTFIX_WEBHOOK_SECRET is empty; /webhook is never served without it")
	case o.Config.AppID == 0:
		return nil, errors.New("webhook: AGENTFIX_APP_ID is not set")
	case o.MaxInflightBytes < 0 || o.MaxClientInflightBytes < 0 || o.BodyTimeout < 0 || o.BodyTimeoutPerMiB < 0:
		return nil, errors.New("webhook: MaxInflightBytes, MaxClientInflightBytes, BodyTimeout and BodyTimeoutPerMiB must not be negative")
	}
	m, err := newMetrics(o.Registry)
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	r := rules{appID: o.Config.AppID, triggerLabel: o.Config.TriggerLabel, command: o.Config.Command}
	limit := cmp.Or(o.MaxInflightBytes, DefaultMaxInflightBytes)
	share := cmp.Or(o.MaxClientInflightBytes, limit/defaultClientShares)
	return &Server{
		secret:            []byte(o.Config.WebhookSecret),
		handlers:          handlers(r),
		claims:            claims{rdb: o.Redis, appID: o.Config.AppID},
		inflight:          newInflight(limit, share, func(used int64) { m.inflight.Set(float64(used)) }),
		bodyTimeout:       cmp.Or(o.BodyTimeout, DefaultBodyTimeout),
		bodyTimeoutPerMiB: cmp.Or(o.BodyTimeoutPerMiB, DefaultBodyTimeoutPerMiB),
		queue:             o.Queue,
		rdb:               o.Redis,
		registry:          o.Registry,
		metrics:           m,
		log:               o.Logger,
	}, nil
}

// Routes mounts the edge's endpoints on r.
func (s *Server) Routes(r chi.Router) {
	r.Post("/webhook", s.serveWebhook)
	HealthRoutes(r, s.rdb, s.registry)
}

// Handler returns a router with the edge's endpoints.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	s.Routes(r)
	return r
}
