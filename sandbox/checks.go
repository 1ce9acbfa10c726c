package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/session"
	"github.com/agentfix/agentfix/workspace"
)

// CheckDocker checks, before any model call, that the docker sandbox can
// start containers of image: the daemon answers and the image is on this
// machine or is pulled (onPull is told first). imageVar names where the
// image came from (AGENTFIX_SANDBOX_IMAGE, --image) and sandboxVar where
// another sandbox is chosen; a failure names them, with docker's answer.
func CheckDocker(ctx context.Context, image, imageVar, sandboxVar string, onPull func(image string)) error {
	err := workspace.CheckDocker(ctx, workspace.DockerCheck{Image: image, OnPull: onPull})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, workspace.ErrDockerImage):
		return config.Error{Err: fmt.Errorf("%s: %w; build or push it, log in to its registry (docker login), or name another image", imageVar, err)}
	}
	return config.Error{Err: fmt.Errorf("%s %s: the docker sandbox cannot run it: %w; start Docker (or point DOCKER_HOST at it), or choose another sandbox with %s",
		imageVar, image, err, sandboxVar)}
}

// SetupEgress returns AGENTFIX_SETUP_EGRESS as its list, checked.
func SetupEgress(cfg *config.App) ([]string, error) {
	var out []string
	for _, e := range strings.Split(cfg.SetupEgress, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	if err := workspace.ValidateSetupEgress(out); err != nil {
		return nil, config.Error{Err: fmt.Errorf("AGENTFIX_SETUP_EGRESS: %w", err)}
	}
	return out, nil
}

// Limits says at startup which per-job limits the kernel enforces for the
// bwrap sandbox here; without AGENTFIX_ALLOW_UNENFORCED_LIMITS a limit it
// cannot enforce stops the worker. Other sandboxes have their own limits
// (docker) or none (none).
func Limits(ctx context.Context, cfg *config.App, log *slog.Logger) (workspace.LimitsReport, error) {
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
			return rep, config.Error{Err: fmt.Errorf("AGENTFIX_ALLOW_UNENFORCED_LIMITS: %w; give the worker what it needs (docs/operations.md), or set AGENTFIX_ALLOW_UNENFORCED_LIMITS=true to run without them", err)}
		}
		log.Warn("running with per-job limits the kernel does not enforce (AGENTFIX_ALLOW_UNENFORCED_LIMITS)", logattr.Err, err)
	}
	return rep, nil
}

// Probe builds one sandbox of factory on throwaway directories, so a
// sandbox that cannot run on this host (bwrap or prlimit missing) stops
// startup instead of failing every job.
func Probe(factory session.SandboxFactory) error {
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
	sb, err := factory(workspace.Options{Workspace: ws, Cache: cache})
	if err != nil {
		return err
	}
	if c, ok := sb.(io.Closer); ok {
		return c.Close() // the probe's cgroup goes with it
	}
	return nil
}

// Worker is the sandbox a worker runs its jobs in, checked at startup.
type Worker struct {
	// Factory builds each job's sandbox.
	Factory session.SandboxFactory
	// Images is the cache of unpacked images (WorkerImages).
	Images session.Images
	// Disk, when not nil, gives each job a disk of its own whose size and
	// inodes the kernel limits.
	Disk *workspace.JobDiskOptions
}

// ForWorkerChecked returns the worker's sandbox after the startup checks,
// each error naming the variable to change: AGENTFIX_SETUP_EGRESS, the
// limits the kernel enforces here (Limits), one sandbox built on
// throwaway directories (Probe), for docker the daemon and
// AGENTFIX_SANDBOX_IMAGE (CheckDocker), and the image cache.
func ForWorkerChecked(ctx context.Context, cfg *config.App, log *slog.Logger) (Worker, error) {
	egress, err := SetupEgress(cfg)
	if err != nil {
		return Worker{}, err
	}
	limits, err := Limits(ctx, cfg, log)
	if err != nil {
		return Worker{}, err
	}
	w := Worker{Factory: ForWorker(cfg, egress, limits.Cgroups)}
	if err := Probe(w.Factory); err != nil {
		return Worker{}, err
	}
	if cfg.Sandbox == "docker" {
		pull := func(image string) { log.Info("pulling the sandbox image (not on this machine yet)", "image", image) }
		if err := CheckDocker(ctx, cfg.SandboxImage, "AGENTFIX_SANDBOX_IMAGE", "AGENTFIX_SANDBOX", pull); err != nil {
			return Worker{}, err
		}
	}
	if limits.Disk.Enforced {
		w.Disk = &workspace.JobDiskOptions{}
	}
	if w.Images, err = WorkerImages(cfg, log); err != nil {
		return Worker{}, err
	}
	return w, nil
}
