package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs/worker"
	"github.com/agentfix/agentfix/rootfs"
	"github.com/agentfix/agentfix/runs"
	"github.com/agentfix/agentfix/session"
	"github.com/agentfix/agentfix/setupcache"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/webhook"
	"github.com/agentfix/agentfix/workspace"
)

// runWorker runs the two worker queues (interactive and agent) with a
// listener for /healthz, /readyz and /metrics. It needs a configured App,
// a model and a shared Redis.
func (m *Main) runWorker(ctx context.Context, args []string) error {
	var cf configFlags
	if err := parse(m.flagSet("worker", &cf), args); err != nil {
		return err
	}
	cfg, log, err := m.loadConfig(cf)
	if err != nil {
		return err
	}
	if cfg.SetupMode() {
		return configError{fmt.Errorf("AGENTFIX_APP_ID: required by `bot worker` (setup mode is served by `bot serve`)")}
	}
	rdb, log, err := m.openRedis(ctx, cfg, log, false)
	if err != nil {
		return err
	}
	reg := newRegistry()
	w, err := newWorker(ctx, cfg, rdb, reg, log)
	if err != nil {
		return err
	}
	r := chi.NewRouter()
	r.Get("/healthz", webhook.Healthz)
	r.Get("/readyz", webhook.Readyz(rdb))
	r.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// The admin views and signed run pages, as on the edge.
	if err := mountAdmin(r, cfg, rdb, log); err != nil {
		return err
	}
	sweep, err := newSweeperLoop(cfg, rdb, log)
	if err != nil {
		return err
	}
	return runAll(ctx,
		func(ctx context.Context) error { return m.serveHTTP(ctx, cfg.ListenAddr, r, log) },
		w.Run,
		sweep,
	)
}

// newWorker wires the worker: the GitHub App, the repository cache and run
// records under AGENTFIX_DATA_DIR, the budgets on the shared Redis, the
// signed run links of PR bodies (with AGENTFIX_PUBLIC_URL), and the
// sandbox and model named by the configuration. Names that select
// nothing, a sandbox that cannot run here (bwrap missing, no Docker daemon
// or image) and a model that cannot be built or whose key is refused stop
// startup, the sandbox checked before the model is called.
func newWorker(ctx context.Context, cfg *config.App, rdb redis.UniversalClient, reg *prometheus.Registry, log *slog.Logger) (*worker.Worker, error) {
	if cfg.Model == "" {
		return nil, configError{errors.New("AGENTFIX_MODEL: required by the worker, e.g. openai/gpt-5 or anthropic/claude-sonnet-4-5")}
	}
	model, err := newModel(cfg, cfg.Model, log, nil)
	if err != nil {
		return nil, err
	}
	modelErrors := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentfix_model_errors_total",
		Help: "Failed model provider calls, retried or not, by provider.",
	}, []string{"provider"})
	if err := reg.Register(modelErrors); err != nil {
		return nil, fmt.Errorf("register model metrics: %w", err)
	}
	egress, err := setupEgress(cfg)
	if err != nil {
		return nil, err
	}
	limits, err := sandboxLimits(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	sandbox := workerSandbox(cfg, egress, limits.Cgroups)
	if err := probeSandbox(sandbox); err != nil {
		return nil, err
	}
	if cfg.Sandbox == "docker" {
		pull := func(image string) { log.Info("pulling the sandbox image (not on this machine yet)", "image", image) }
		if err := checkDocker(ctx, cfg.SandboxImage, "AGENTFIX_SANDBOX_IMAGE", "AGENTFIX_SANDBOX", pull); err != nil {
			return nil, err
		}
	}
	if err := checkModel(ctx, cfg, model, log); err != nil {
		return nil, err
	}
	key, err := cfg.PrivateKeyPEM()
	if err != nil {
		return nil, configError{fmt.Errorf("AGENTFIX_PRIVATE_KEY_FILE: %w", err)}
	}
	app, err := ghapp.New(ghapp.Options{AppID: cfg.AppID, PrivateKey: key, APIURL: cfg.GitHubAPIURL, Logger: log, Registerer: reg})
	if err != nil {
		return nil, configError{err}
	}
	cache, err := workspace.NewCache(workspace.CacheOptions{Dir: filepath.Join(cfg.DataDir, "repos"), Logger: log})
	if err != nil {
		return nil, fmt.Errorf("AGENTFIX_DATA_DIR: %w", err)
	}
	store, err := runs.New(runs.Options{Dir: filepath.Join(cfg.DataDir, "runs"), Redis: rdb, Retention: cfg.RunRetention})
	if err != nil {
		return nil, fmt.Errorf("AGENTFIX_DATA_DIR: %w", err)
	}
	spend, err := budget.New(rdb, budget.LimitsFrom(cfg), budget.Options{Registerer: reg})
	if err != nil {
		return nil, configError{err}
	}
	var disk *workspace.JobDiskOptions
	if limits.Disk.Enforced {
		disk = &workspace.JobDiskOptions{}
	}
	images, err := imageCache(cfg, log)
	if err != nil {
		return nil, err
	}
	setupCaches, err := setupcache.New(setupcache.Options{Dir: filepath.Join(cfg.DataDir, "setup-caches"), MaxBytes: cfg.SetupCacheBytes, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("AGENTFIX_DATA_DIR: %w", err)
	}
	return worker.New(worker.Options{
		JobDisk: disk, Images: images, SetupCache: setupCaches,
		Config: cfg, Redis: rdb, GitHub: worker.FromApp(app), Cache: cache, Runs: store,
		Sandbox: sandbox,
		Model: func(name string) (agent.Model, error) {
			provider, _, _ := strings.Cut(name, "/")
			m, err := newModel(cfg, name, log, func(error) { modelErrors.WithLabelValues(provider).Inc() })
			if err != nil {
				return nil, err
			}
			return m, nil
		},
		Budget: spend, ModelPrice: modelPrice,
		PublicURL: cfg.PublicURL, LinkKey: runs.LinkKey(cfg.WebhookSecret),
		Registry: reg, Logger: log,
	})
}

// workerSandbox returns the worker's sandbox factory: the sandbox named by
// AGENTFIX_SANDBOX, with the image of AGENTFIX_SANDBOX_IMAGE for docker.
func workerSandbox(cfg *config.App, egress []string, cgroups *workspace.Cgroups) worker.SandboxFactory {
	return func(o workspace.Options) (tools.Sandbox, error) {
		o.AllowUnsandboxed, o.SetupEgress, o.Cgroups = cfg.AllowUnsandboxed, egress, cgroups
		if o.DockerImage == "" {
			o.DockerImage = cfg.SandboxImage // the run names no image (the startup probe)
		}
		return newSandbox(cfg.Sandbox, o)
	}
}

// defaultImageCacheBytes bounds the unpacked images when
// AGENTFIX_IMAGE_CACHE_BYTES is 0.
const defaultImageCacheBytes = 20 << 30

// imageCache opens the cache of unpacked images under the data directory
// for the bwrap sandbox, after checking that the kernel can lay a job's
// writable layer over an image; docker gets nil (it pulls images itself),
// none noImages.
func imageCache(cfg *config.App, log *slog.Logger) (session.Images, error) {
	switch cfg.Sandbox {
	case "none":
		return noImages, nil
	case "docker":
		return nil, nil
	}
	if err := workspace.CheckImageOverlay(cfg.DataDir); err != nil {
		if cfg.SandboxImage != "" {
			return nil, configError{fmt.Errorf("AGENTFIX_SANDBOX_IMAGE: %w", err)}
		}
		log.Warn("jobs cannot run in container images on this host; repositories that name one will fail", logErr(err))
	}
	return openImages(cfg, log)
}

// noImages is the none sandbox's: it runs commands on this machine, and a
// repository's image is named as not used.
var noImages = session.NoImages{Why: "the none sandbox runs commands on this machine, in no image"}

// openImages opens the cache of unpacked images under AGENTFIX_DATA_DIR,
// which bot fix shares with a worker on the same machine.
func openImages(cfg *config.App, log *slog.Logger) (session.Images, error) {
	max := cfg.ImageCacheBytes
	if max == 0 {
		max = defaultImageCacheBytes
	}
	c, err := rootfs.New(rootfs.Options{Dir: filepath.Join(cfg.DataDir, "images"), MaxBytes: max, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("AGENTFIX_DATA_DIR: %w", err)
	}
	return c, nil
}

// sandboxLimits says at startup which per-job limits the kernel enforces
// for the bwrap sandbox here; without AGENTFIX_ALLOW_UNENFORCED_LIMITS a
// limit it cannot enforce stops the worker. Other sandboxes have their
// own limits (docker) or none (none).
func sandboxLimits(ctx context.Context, cfg *config.App, log *slog.Logger) (workspace.LimitsReport, error) {
	if cfg.Sandbox != "bwrap" {
		return workspace.LimitsReport{}, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return workspace.LimitsReport{}, fmt.Errorf("AGENTFIX_DATA_DIR: %w", err)
	}
	rep, err := workspace.CheckLimits(ctx, cfg.DataDir)
	if err != nil {
		return rep, fmt.Errorf("check the sandbox's limits: %w", err)
	}
	log.Info("sandbox limits per job:\n" + strings.TrimRight(rep.String(), "\n"))
	if err := rep.Err(); err != nil {
		if !cfg.AllowUnenforcedLimits {
			return rep, configError{fmt.Errorf("AGENTFIX_ALLOW_UNENFORCED_LIMITS: %w; give the worker what it needs (docs/operations.md), or set AGENTFIX_ALLOW_UNENFORCED_LIMITS=true to run without them", err)}
		}
		log.Warn("running with per-job limits the kernel does not enforce (AGENTFIX_ALLOW_UNENFORCED_LIMITS)", logErr(err))
	}
	return rep, nil
}

// probeSandbox builds one sandbox on throwaway directories, so a sandbox
// that cannot run on this host (bwrap or prlimit missing) stops startup
// instead of failing every job.
func probeSandbox(sandbox worker.SandboxFactory) error {
	dir, err := os.MkdirTemp("", "agentfix-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ws, cache := filepath.Join(dir, "workspace"), filepath.Join(dir, "cache")
	for _, d := range []string{ws, cache} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	sb, err := sandbox(workspace.Options{Workspace: ws, Cache: cache})
	if err != nil {
		return err
	}
	if c, ok := sb.(io.Closer); ok {
		return c.Close() // the probe's cgroup goes with it
	}
	return nil
}

// runAll runs each function until ctx is done or one of them returns; then
// it cancels the others, waits for all, and returns their errors joined.
func runAll(ctx context.Context, fns ...func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(ctx)
			cancel()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
