package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/agentfix/agentfix/devcontainer"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/rootfs"
	"github.com/agentfix/agentfix/setupcache"
	"github.com/agentfix/agentfix/workspace"
)

// Images gives a run the root filesystem of an image its environment
// names: rootfs.Cache, which pulls, verifies and unpacks it once per
// digest for the whole host.
type Images interface {
	Get(ctx context.Context, image string) (*rootfs.Root, error)
}

// SetupCache keeps the caches setup filled for the next job of a
// repository with the same key (setupcache.Cache).
type SetupCache interface {
	Restore(ctx context.Context, repo, key, dst string) (bool, error)
	Save(ctx context.Context, repo, key, src string) error
}

// Environment is where a run's commands ran, for people: the status
// comment, the check run and the pull request body name it.
type Environment struct {
	// Source is where it came from.
	Source devcontainer.Source `json:"source"`
	// Image is the image as named ("" for the worker's own root); Pinned
	// is it as repository@digest once pulled.
	Image  string `json:"image,omitempty"`
	Pinned string `json:"pinned,omitempty"`
	// Description names it in one phrase ("image `golang:1.26`
	// (`index.docker.io/library/golang@sha256:…`), named in
	// `.github/agent-fix.yml`").
	Description string `json:"description"`
	// Notes are what the choice passed over and what is not applied.
	Notes []string `json:"notes,omitempty"`
	// WarmCaches is set when setup started from the caches an earlier job
	// of the repository saved.
	WarmCaches bool `json:"warm_caches,omitempty"`
}

// EnvironmentError is an image that cannot be used: not found, refused,
// a bad digest, unsafe. The run ends before any model call.
type EnvironmentError struct {
	Choice devcontainer.Choice
	Err    error
}

func (e *EnvironmentError) Error() string {
	return fmt.Sprintf("the image %q (%s) cannot be used: %v", e.Choice.Image, e.Where(), e.Err)
}

// Where says where the image was named, for people ("named in
// .github/agent-fix.yml").
func (e *EnvironmentError) Where() string { return sourceName(e.Choice) }

func (e *EnvironmentError) Unwrap() error { return e.Err }

// sourceName says where an image was named, for people.
func sourceName(c devcontainer.Choice) string {
	switch c.Source {
	case devcontainer.SourceRepoConfig:
		return "named in " + devcontainer.RepoConfigFile
	case devcontainer.SourceDevcontainer:
		return "named in " + c.Devcontainer.Path
	case devcontainer.SourceOperator:
		return "the operator's AGENTFIX_SANDBOX_IMAGE"
	case devcontainer.SourceOverride:
		return "named for this run"
	}
	return "the worker's own system"
}

// ReadDevcontainer reads the Dev Container configuration of commit — the
// default branch's head, as for the instructions files, so an earlier
// round of the agent cannot choose the image. It returns nil and no error
// when there is none.
func ReadDevcontainer(ctx context.Context, t Tree, commit string) (*devcontainer.Config, error) {
	names := devcontainer.Files()
	const limit = 1 << 20
	files, err := t.Files(ctx, commit, func(p string) bool { return slices.Contains(names, p) }, limit+1)
	if err != nil {
		return nil, fmt.Errorf("read the dev container configuration: %w", err)
	}
	for _, name := range names {
		text, ok := files[name]
		if !ok {
			continue
		}
		if len(text) > limit {
			return nil, fmt.Errorf("`%s` is larger than %d bytes", name, limit)
		}
		return devcontainer.Parse(name, []byte(text), workspace.WorkspaceDir)
	}
	return nil, nil
}

// NoImages is the Images of a sandbox that runs no images (the none
// sandbox, which runs commands on the worker's own system): a run whose
// environment names one runs on the worker's own system instead, without
// the devcontainer's commands and environment, and its environment says
// so. Why is the reason, in words.
type NoImages struct{ Why string }

// Get refuses every image.
func (n NoImages) Get(context.Context, string) (*rootfs.Root, error) { return nil, errors.New(n.Why) }

// LazyImages returns Images that calls open on the first image a run
// names, once, and then gets every image from what it opened (or fails
// with its error): a run naming none (bot fix on the worker's own system)
// opens nothing and leaves nothing in the data directory.
func LazyImages(open func() (Images, error)) Images {
	return &lazyImages{open: sync.OnceValues(open)}
}

type lazyImages struct{ open func() (Images, error) }

func (l *lazyImages) Get(ctx context.Context, image string) (*rootfs.Root, error) {
	c, err := l.open()
	if err != nil {
		return nil, err
	}
	return c.Get(ctx, image)
}

// environment is a run's chosen and prepared environment.
type environment struct {
	info  Environment
	image *workspace.Image // nil: the worker's own root
	// ref is the image for a sandbox that pulls it itself (docker).
	ref   string
	setup []string // the devcontainer's lifecycle commands
	root  *rootfs.Root
}

// prepareEnvironment chooses the run's environment and pulls its image.
func prepareEnvironment(ctx context.Context, o Options) (*environment, error) {
	s := o.Settings
	c := devcontainer.Choose(devcontainer.Inputs{
		Override: o.ImageOverride, RepoImage: s.Image,
		Devcontainer: s.Devcontainer, DevcontainerErr: s.DevcontainerErr, OperatorImage: o.OperatorImage,
	})
	description := "" // the worker's own system's, when no image is used
	if no, ok := o.Images.(NoImages); ok && c.Source != devcontainer.SourceWorker {
		note := fmt.Sprintf("the image `%s` (%s) is not used: %s", c.Image, sourceName(c), no.Why)
		c = devcontainer.Choice{Source: devcontainer.SourceWorker, Notes: append(c.Notes, note)}
		description = "the worker's own system (" + no.Why + ")"
	}
	env := &environment{info: Environment{Source: c.Source, Image: c.Image, Notes: c.Notes}}
	if c.Devcontainer != nil {
		for _, cmd := range c.Devcontainer.Setup {
			env.setup = append(env.setup, cmd.Shell)
		}
	}
	if c.Source == devcontainer.SourceWorker {
		env.info.Description = c.Describe("")
		if description != "" {
			env.info.Description = description
		}
		return env, nil
	}
	if o.Images == nil {
		// A sandbox that pulls images itself (docker) gets the reference.
		env.ref, env.info.Pinned = c.Image, c.Image
		env.info.Description = c.Describe(c.Image)
		return env, nil
	}
	root, err := o.Images.Get(ctx, c.Image)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("pull %s: %w", c.Image, err)
		}
		return nil, &EnvironmentError{Choice: c, Err: err}
	}
	env.root, env.ref = root, root.Pinned()
	env.info.Pinned = root.Pinned()
	env.info.Description = c.Describe(root.Pinned())
	vars := root.Env
	if c.Devcontainer != nil {
		vars = c.Devcontainer.Environ(root.Env)
	}
	env.image = &workspace.Image{Root: root.Dir, Env: vars, Layer: filepath.Join(filepath.Dir(o.WorkTree.CacheDir()), "layer")}
	o.Logger.Info("environment", "image", c.Image, "pinned", root.Pinned(), "pulled", root.Pulled)
	return env, nil
}

// release lets the image's root be evicted again.
func (e *environment) release(log interface{ Warn(string, ...any) }) {
	if e.root == nil {
		return
	}
	if err := e.root.Release(); err != nil {
		log.Warn("release the image's root", logattr.Err, err)
	}
}

// key names the environment in the baselines' and setup caches' keys.
func (e *environment) key() string {
	if e.info.Pinned == "" {
		return "worker"
	}
	return e.info.Pinned
}

// sandboxOptions are the options of a sandbox of the run, for a working
// copy and a cache.
func (o Options) sandboxOptions(ws, cache string, onJobDisk bool) workspace.Options {
	so := workspace.Options{Workspace: ws, Cache: cache, Logger: o.Logger, OnJobDisk: onJobDisk}
	if e := o.env; e != nil {
		so.Image, so.DockerImage = e.image, e.ref
	}
	return so
}

// warmCaches restores the caches an earlier job of the repository saved
// for the same environment, setup and lockfiles, into the job's HOME; it
// returns the key to save under after setup, or "" when there is no
// cache. A failure is logged: setup then starts cold.
func warmCaches(ctx context.Context, o Options, commands []string) (key string, warm bool) {
	if o.SetupCache == nil || len(commands) == 0 {
		return "", false
	}
	locks, err := setupcache.Lockfiles(o.WorkTree.Dir())
	if err != nil {
		o.Logger.Warn("setup caches: read the lockfiles", logattr.Err, err)
		return "", false
	}
	key = setupcache.Key(o.env.key(), commands, locks)
	warm, err = o.SetupCache.Restore(ctx, o.Task.Repo, key, o.WorkTree.CacheDir())
	if err != nil {
		o.Logger.Warn("setup caches: restore", logattr.Err, err)
	}
	return key, warm
}

// saveCaches keeps the caches setup filled, when the run's settings let
// it (setup ran the default branch's own files).
func saveCaches(ctx context.Context, o Options, key string) {
	if key == "" || !o.Settings.SaveSetupCache {
		return
	}
	if err := o.SetupCache.Save(ctx, o.Task.Repo, key, o.WorkTree.CacheDir()); err != nil && !errors.Is(err, context.Canceled) {
		o.Logger.Warn("setup caches: save", logattr.Err, err)
	}
}
