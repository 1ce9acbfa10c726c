package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
	"github.com/agentfix/agentfix/session"
	"github.com/agentfix/agentfix/workspace"
)

// Defaults of Options.
const (
	// DefaultShutdownTimeout is how long a shutdown lets running tasks
	// finish before asynq puts them back in their queue (a job then
	// reports "interrupted" and the next worker retries it).
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultGitHubTimeout bounds each report to GitHub once the agent is
	// done; those calls do not stop when the job's context does.
	DefaultGitHubTimeout = 2 * time.Minute
	// DefaultPoll is the wait between two looks at a Redis key another
	// task holds (job lock, status comment being created).
	DefaultPoll = 200 * time.Millisecond
)

// Options are the dependencies of a Worker. Config, Redis, GitHub, Cache,
// Runs, Sandbox, Model, Budget, Registry and Logger are required.
type Options struct {
	// Config supplies the data directory, the model name, the job limits,
	// the concurrency of each queue, the trigger label and command.
	Config *config.App
	// Redis holds the queues and the worker's state (markers, locks, saved
	// results). The worker does not close it.
	Redis    redis.UniversalClient
	GitHub   Installations
	Cache    RepoCache
	Runs     RunStore
	Sandbox  SandboxFactory
	Model    ModelFactory
	Registry prometheus.Registerer
	Logger   *slog.Logger

	// Images pulls and unpacks the images jobs name (rootfs.Cache), for
	// the bwrap sandbox; nil gives a sandbox that pulls images itself
	// (docker) the reference. Config.SandboxImage is the operator's
	// default image.
	Images session.Images
	// SetupCache keeps warm setup caches between jobs of a repository
	// (setupcache.Cache); nil keeps none.
	SetupCache session.SetupCache

	// Budget charges model calls to the job's, the repository's and the
	// installation's budgets (DESIGN.md §9); it may be shared by any
	// number of workers on one Redis.
	Budget *budget.Budget
	// ModelPrice tells the budgets what a call of a model built by Model
	// can cost at most; nil counts every model as unpriced (tokens only).
	ModelPrice func(agent.Model) ModelPrice

	// AllowWorkflowChanges lets every job push changes under
	// .github/workflows/; without it a repository allows them for itself
	// with allow_workflow_changes in its .github/agent-fix.yml.
	AllowWorkflowChanges bool
	// CommitAuthor is the identity of the bot's commits; empty means the
	// App's bot account, "<slug>[bot] <<slug>[bot]@users.noreply.github.com>".
	CommitAuthor workspace.Identity
	// PublicURL (AGENTFIX_PUBLIC_URL) and LinkKey (runs.LinkKey), when
	// both set, put a signed link to the run's page in PR bodies, valid
	// for Config.RunRetention.
	PublicURL string
	LinkKey   []byte

	// Now is the clock (default time.Now).
	Now func() time.Time
	// StatusInterval is the least time between two progress edits of a
	// status comment (report.DefaultStatusInterval).
	StatusInterval time.Duration
	// ShutdownTimeout is asynq's grace period (DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	// GitHubTimeout bounds each report after the agent ran
	// (DefaultGitHubTimeout).
	GitHubTimeout time.Duration
	// RetryDelay is how long a failed task waits before its retry; nil
	// uses retryDelay.
	RetryDelay func(n int, err error) time.Duration
	// Poll is the wait between looks at a key another task holds
	// (DefaultPoll).
	Poll time.Duration
	// TaskCheckInterval and DelayedTaskCheckInterval are asynq's waits
	// between looks for new tasks when its queues are empty and for
	// scheduled and retried tasks that became due (asynq's defaults, 1 s
	// and 5 s, when zero); tests set them short.
	TaskCheckInterval, DelayedTaskCheckInterval time.Duration
	// JobDisk, when set, puts each job's working copy and cache on a
	// size- and inode-limited disk of its own (workspace.CheckLimits says
	// whether the host can).
	JobDisk *workspace.JobDiskOptions
	// SweepInterval is how often the worker looks for jobs that ended
	// without a word to people (DefaultSweepInterval; negative: never).
	SweepInterval time.Duration
}

// Worker runs the interactive and agent queues: two asynq servers on one
// Redis, each with its own concurrency, so acknowledgements never wait
// behind agent jobs.
type Worker struct {
	opts      Options
	rdb       redis.UniversalClient
	inspector *asynq.Inspector
	store     *store.Store
	metrics   *metrics
	queue     *jobs.Client // enqueues follow-up rounds and rounds moved from an issue
	log       *slog.Logger
	now       func() time.Time

	texts   *report.Texts
	journal *journal
	// The steps every job is made of.
	replies  *replier
	statuses *statuses
	settings *settingsLoader
	gate     *gate
	checkout *checkout
	agent    *agentStep
	publish  *publisher
	checks   *checks

	handlers sync.WaitGroup
}

// New checks o and returns a Worker; Run starts it.
func New(o Options) (*Worker, error) {
	switch {
	case o.Config == nil || o.Redis == nil || o.GitHub == nil || o.Cache == nil || o.Runs == nil ||
		o.Sandbox == nil || o.Model == nil || o.Budget == nil || o.Registry == nil || o.Logger == nil:
		return nil, errors.New("worker: Config, Redis, GitHub, Cache, Runs, Sandbox, Model, Budget, Registry and Logger are required")
	case o.Config.Model == "":
		return nil, errors.New("worker: AGENTFIX_MODEL is not set")
	case o.Config.DataDir == "":
		return nil, errors.New("worker: AGENTFIX_DATA_DIR is not set")
	}
	if o.CommitAuthor != (workspace.Identity{}) && (o.CommitAuthor.Name == "" || o.CommitAuthor.Email == "") {
		return nil, errors.New("worker: CommitAuthor needs a name and an email")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = report.DefaultStatusInterval
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.GitHubTimeout <= 0 {
		o.GitHubTimeout = DefaultGitHubTimeout
	}
	if o.RetryDelay == nil {
		o.RetryDelay = retryDelay
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = DefaultSweepInterval
	}
	x, err := report.New()
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	m, err := newMetrics(o.Registry)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	dataDir, err := filepath.Abs(o.Config.DataDir)
	if err != nil {
		return nil, fmt.Errorf("worker: data dir: %w", err)
	}
	st := store.New(o.Redis, o.Poll)
	w := &Worker{
		opts:      o,
		rdb:       o.Redis,
		inspector: asynq.NewInspectorFromRedisClient(o.Redis),
		store:     st,
		metrics:   m,
		queue:     jobs.NewClient(o.Redis, o.Config.MaxDuration),
		log:       o.Logger,
		now:       o.Now,
		texts:     x,
	}
	w.journal = &journal{dir: filepath.Join(dataDir, "open")}
	w.replies = &replier{texts: x, store: st, cfg: o.Config}
	w.statuses = &statuses{journal: w.journal, texts: x, store: st, interval: o.StatusInterval, now: o.Now, cfg: o.Config}
	w.settings = &settingsLoader{inst: o.GitHub, cfg: o.Config, allowWorkflows: o.AllowWorkflowChanges, model: o.Model}
	w.gate = &gate{budget: o.Budget, replies: w.replies}
	w.checkout = &checkout{cache: o.Cache, inst: o.GitHub, jobsDir: filepath.Join(dataDir, "jobs"), disk: o.JobDisk}
	w.agent = &agentStep{sandbox: o.Sandbox, model: o.Model, budget: o.Budget, price: o.ModelPrice,
		metrics: m, store: st, now: o.Now, scratch: filepath.Join(dataDir, "jobs"),
		images: o.Images, setupCache: o.SetupCache, operatorImage: o.Config.SandboxImage, runSession: session.Run}
	w.checks = &checks{journal: w.journal, texts: x, store: st}
	w.publish = &publisher{cache: o.Cache, inst: o.GitHub, texts: x, author: o.CommitAuthor, cfg: o.Config,
		publicURL: o.PublicURL, linkKey: o.LinkKey, now: o.Now}
	return w, nil
}

// Handler returns the task handler of both servers, for tests and custom
// servers.
func (w *Worker) Handler() asynq.Handler {
	mux := asynq.NewServeMux()
	mux.HandleFunc(jobs.TypeNotice, w.tracked(w.handleNotice))
	mux.HandleFunc(jobs.TypeCancel, w.tracked(w.handleCancel))
	mux.HandleFunc(jobs.TypeFix, w.tracked(w.handleFix))
	mux.HandleFunc(jobs.TypeRevise, w.tracked(w.handleRevise))
	mux.HandleFunc(jobs.TypeFollowUp, w.tracked(w.handleFollowUp))
	mux.HandleFunc(jobs.TypeChecks, w.tracked(w.handleChecks))
	mux.HandleFunc(jobs.TypeBaseMoved, w.tracked(w.handleBaseMoved))
	mux.HandleFunc(jobs.TypeCI, w.tracked(w.handleCI))
	mux.HandleFunc(jobs.TypeConflict, w.tracked(w.handleConflict))
	return mux
}

// tracked counts a handler as running until it returns, so Run can wait for
// handlers asynq gave up on at shutdown to finish their reports.
func (w *Worker) tracked(h func(context.Context, *asynq.Task) error) func(context.Context, *asynq.Task) error {
	return func(ctx context.Context, t *asynq.Task) error {
		w.handlers.Add(1)
		defer w.handlers.Done()
		return h(ctx, t)
	}
}

// Run starts both servers and blocks until ctx is done, then shuts them
// down: running tasks get ShutdownTimeout to finish, after which asynq puts
// them back in their queue and cancels them; Run then waits (a bounded
// time) for their handlers to report and return.
func (w *Worker) Run(ctx context.Context) error {
	h := w.Handler()
	servers := []*asynq.Server{
		w.server(jobs.QueueInteractive, w.opts.Config.InteractiveConcurrency),
		w.server(jobs.QueueAgent, w.opts.Config.AgentConcurrency),
	}
	for i, s := range servers {
		if err := s.Start(h); err != nil {
			for _, started := range servers[:i] {
				started.Shutdown()
			}
			return fmt.Errorf("worker: start: %w", err)
		}
	}
	w.log.Info(fmt.Sprintf("worker started: %d agent and %d interactive slots",
		w.opts.Config.AgentConcurrency, w.opts.Config.InteractiveConcurrency))
	var sweeping sync.WaitGroup
	if w.opts.SweepInterval > 0 {
		sweeping.Add(1)
		go func() {
			defer sweeping.Done()
			defer func() {
				if p := recover(); p != nil {
					w.log.Error(fmt.Sprintf("the sweep panicked: %v", p))
				}
			}()
			w.sweepLoop(ctx, w.opts.SweepInterval)
		}()
	}
	<-ctx.Done()
	sweeping.Wait()
	w.log.Info("worker shutting down")
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Shutdown()
		}()
	}
	wg.Wait()
	done := make(chan struct{})
	go func() {
		w.handlers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(w.opts.GitHubTimeout):
		w.log.Warn("handlers still running after the shutdown grace period; leaving them")
	}
	return nil
}

// server returns an asynq server for one queue.
func (w *Worker) server(queue string, concurrency int) *asynq.Server {
	log := w.log.With(logattr.Queue, queue)
	return asynq.NewServerFromRedisClient(w.rdb, asynq.Config{
		Concurrency:              concurrency,
		Queues:                   map[string]int{queue: 1},
		ShutdownTimeout:          w.opts.ShutdownTimeout,
		RetryDelayFunc:           func(n int, err error, _ *asynq.Task) time.Duration { return w.opts.RetryDelay(n, err) },
		TaskCheckInterval:        w.opts.TaskCheckInterval,
		DelayedTaskCheckInterval: w.opts.DelayedTaskCheckInterval,
		Logger:                   asynqLogger{log},
		LogLevel:                 asynq.WarnLevel,
		ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, t *asynq.Task, err error) {
			id, _ := asynq.GetTaskID(ctx)
			n, _ := asynq.GetRetryCount(ctx)
			log.Warn("task failed", logattr.Task, id, logattr.Attempt, n+1, logattr.Err, err)
		}),
	})
}

// asynqLogger sends asynq's own log lines to slog.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }
