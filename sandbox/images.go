package sandbox

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/rootfs"
	"github.com/agentfix/agentfix/session"
	"github.com/agentfix/agentfix/workspace"
)

// DefaultImageCacheBytes bounds the unpacked images when
// AGENTFIX_IMAGE_CACHE_BYTES is 0.
const DefaultImageCacheBytes = 20 << 30

// NoImages is the none sandbox's: it runs commands on this machine, and a
// repository's image is named as not used.
var NoImages = session.NoImages{Why: "the none sandbox runs commands on this machine, in no image"}

// WorkerImages opens the worker's cache of unpacked images for the bwrap
// sandbox, after checking that the kernel can lay a job's writable layer
// over an image (a failure stops startup when AGENTFIX_SANDBOX_IMAGE names
// one, and is a warning otherwise); docker gets nil (it pulls images
// itself), none NoImages.
func WorkerImages(cfg *config.App, log *slog.Logger) (session.Images, error) {
	switch cfg.Sandbox {
	case "none":
		return NoImages, nil
	case "docker":
		return nil, nil
	}
	if err := workspace.CheckImageOverlay(cfg.DataDir); err != nil {
		if cfg.SandboxImage != "" {
			return nil, config.Error{Err: fmt.Errorf("AGENTFIX_SANDBOX_IMAGE: %w", err)}
		}
		log.Warn("jobs cannot run in container images on this host; repositories that name one will fail", logattr.Err, err)
	}
	return OpenImages(cfg, log)
}

// LocalImages is bot fix's image cache for sandbox kind: the cache a
// worker on this machine shares, opened at the first run that names an
// image (bwrap), NoImages (none), or nil (docker pulls images itself).
func LocalImages(kind string, cfg *config.App, log *slog.Logger) session.Images {
	switch kind {
	case "bwrap":
		return session.LazyImages(func() (session.Images, error) { return OpenImages(cfg, log) })
	case "none":
		return NoImages
	}
	return nil
}

// OpenImages opens the cache of unpacked images under AGENTFIX_DATA_DIR,
// which bot fix shares with a worker on the same machine.
func OpenImages(cfg *config.App, log *slog.Logger) (session.Images, error) {
	max := cfg.ImageCacheBytes
	if max == 0 {
		max = DefaultImageCacheBytes
	}
	c, err := rootfs.New(rootfs.Options{Dir: filepath.Join(cfg.DataDir, "images"), MaxBytes: max, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("AGENTFIX_DATA_DIR: %w", err)
	}
	return c, nil
}

// ProbeLocal is bot fix's check, before any model call, that the sandbox
// of kind can run here: for docker, CheckDocker of the run's image (named
// by imageFrom), with --sandbox to choose another; out is told of a pull.
func ProbeLocal(out io.Writer) func(ctx context.Context, kind, image, imageFrom string) error {
	return func(ctx context.Context, kind, image, imageFrom string) error {
		if kind != "docker" {
			return nil
		}
		pull := func(image string) {
			fmt.Fprintf(out, "bot fix: pulling the sandbox image %s (not on this machine yet)\n", image)
		}
		if err := CheckDocker(ctx, image, imageFrom, "--sandbox", pull); err != nil {
			return config.Error{Err: fmt.Errorf("bot fix: %w", err)}
		}
		return nil
	}
}
