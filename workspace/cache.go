package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/agentfix/agentfix/internal/logattr"
)

// Defaults of CacheOptions.
const (
	DefaultFetchTimeout = 15 * time.Minute
	// DefaultMaxPacks is how many pack files a cached repository may
	// collect (one per fetch) before Fetch repacks it.
	DefaultMaxPacks = 32
)

// branchesRefSpec fetches every branch, forced: a branch that was
// force-pushed or rebased replaces the cached one, so revise jobs find a pull
// request's branch as it is now.
const branchesRefSpec = "+refs/heads/*:refs/heads/*"

// CacheOptions configure a Cache.
type CacheOptions struct {
	// Dir holds the cached repositories, AGENTFIX_DATA_DIR/repos. Required.
	Dir string
	// FetchTimeout bounds one fetch or push over the network.
	FetchTimeout time.Duration
	// GitTimeout bounds each local git command (init, repack, update-ref).
	GitTimeout time.Duration
	// MaxPacks is how many packs a repository may hold before Fetch
	// repacks it into one.
	MaxPacks int
	// Logger receives debug records of fetches and pushes; nil discards
	// them.
	Logger *slog.Logger
	// Sleep waits between two tries of a push (default: a timer that ends
	// with ctx); tests record the waits instead.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Cache is the repository cache of a worker host: one bare repository per
// GitHub repository under Dir, fetched with go-git in process so the
// installation token stays in memory (see Remote), the received pack
// indexed by git index-pack (see packStorage), and the source of every
// job's working copy, so the next job for a repository costs a fetch of
// what changed. The layout is Dir/<owner>/<name>.git, with
// Dir/<owner>/<name>.lock serializing fetches (exclusive) against working
// copies being made (shared), and Dir/<owner>/<name>.branches/ holding one
// lock file per branch that pushes hold. The locks are flock(2) locks, so
// several worker processes sharing Dir on one host are safe; each wait ends
// when its context does. A Cache is safe for concurrent use.
type Cache struct {
	dir      string
	timeout  time.Duration
	maxPacks int
	home     string
	git      gitRunner // no git dir: callers pass it
	log      *slog.Logger
	sleep    func(ctx context.Context, d time.Duration) error
}

// Fetched is the state of a cached repository after a fetch.
type Fetched struct {
	// Dir is the bare repository.
	Dir string
	// Branches maps every branch of the remote to its commit.
	Branches map[string]string
	// UpToDate is set when no branch changed.
	UpToDate bool
}

// NewCache returns the cache in o.Dir, creating the directory.
func NewCache(o CacheOptions) (*Cache, error) {
	if o.Dir == "" {
		return nil, errors.New("repository cache: Dir is required")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("repository cache: %w", err)
	}
	home := filepath.Join(dir, ".githome")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, fmt.Errorf("repository cache: %w", err)
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = DefaultFetchTimeout
	}
	if o.GitTimeout <= 0 {
		o.GitTimeout = DefaultGitTimeout
	}
	if o.MaxPacks <= 0 {
		o.MaxPacks = DefaultMaxPacks
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	return &Cache{
		dir: dir, timeout: o.FetchTimeout, maxPacks: o.MaxPacks, home: home,
		git: gitRunner{home: home, timeout: o.GitTimeout}, log: o.Logger, sleep: o.Sleep,
	}, nil
}

// Dir returns the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// paths returns the bare repository and the lock file of repo
// ("owner/name", compared without case as GitHub does).
func (c *Cache) paths(repo string) (bare, lock string, err error) {
	owner, name, ok := strings.Cut(strings.ToLower(repo), "/")
	if !ok || !safeName(owner) || !safeName(name) {
		return "", "", fmt.Errorf("repository %q: want owner/name of letters, digits, '-', '_' and '.'", repo)
	}
	base := filepath.Join(c.dir, owner, name)
	return base + ".git", base + ".lock", nil
}

// safeName reports whether s is a GitHub owner or repository name that is
// also a safe path element.
func safeName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 100 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// Fetch brings the cached bare repository of repo ("owner/name") up to
// date with every branch of the remote, forced and pruned, creating it on
// first use. It holds the repository's lock exclusively, waiting for other
// fetches and checkouts. A remote without any branch is an error.
func (c *Cache) Fetch(ctx context.Context, repo string, r Remote) (Fetched, error) {
	bare, lockPath, err := c.paths(repo)
	if err != nil {
		return Fetched{}, fmt.Errorf("fetch: %w", err)
	}
	if err := r.check(); err != nil {
		return Fetched{}, fmt.Errorf("fetch %s: %w", repo, err)
	}
	lock, err := lockFile(ctx, lockPath, false)
	if err != nil {
		return Fetched{}, fmt.Errorf("fetch %s: %w", repo, err)
	}
	defer lock.Unlock()
	start := time.Now()
	if err := c.initBare(ctx, bare); err != nil {
		return Fetched{}, fmt.Errorf("fetch %s: %w", repo, err)
	}
	removeTempPacks(bare)
	st := filesystem.NewStorage(osfs.New(bare), cache.NewObjectLRUDefault())
	before, err := listBranches(st)
	if err != nil {
		return Fetched{}, fmt.Errorf("fetch %s: %w", repo, err)
	}
	fctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	indexer := gitRunner{gitDir: bare, home: c.home, timeout: c.timeout}
	sto := &packStorage{Storage: st, indexPack: func() (io.WriteCloser, error) {
		return indexer.startIndexPack(fctx, st.Reindex)
	}}
	remote := git.NewRemote(sto, &gitconfig.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{r.URL}})
	err = remote.FetchContext(fctx, &git.FetchOptions{
		RefSpecs: []gitconfig.RefSpec{branchesRefSpec},
		Auth:     r.auth(),
		Tags:     git.NoTags,
		Force:    true,
		Prune:    true,
	})
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return Fetched{}, fmt.Errorf("fetch %s: the repository is empty (no branch to work on)", repo)
	case err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate):
		if fctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, context.Cause(fctx))
		}
		return Fetched{}, fmt.Errorf("fetch %s from %s: %w", repo, r.URL, err)
	}
	branches, err := listBranches(st)
	if err != nil {
		return Fetched{}, fmt.Errorf("fetch %s: %w", repo, err)
	}
	upToDate := maps.Equal(before, branches)
	if err := c.maintain(ctx, bare); err != nil {
		c.log.Warn("repack of the repository cache failed", logattr.Repo, repo, logattr.Err, err)
	}
	c.log.Debug("fetched into the repository cache", logattr.Repo, repo, logattr.Duration, time.Since(start),
		logattr.Outcome, map[bool]string{true: "up to date", false: "updated"}[upToDate])
	return Fetched{Dir: bare, Branches: branches, UpToDate: upToDate}, nil
}

// initBare creates the bare repository when it does not exist yet, or
// recreates one a crash left without its HEAD.
func (c *Cache) initBare(ctx context.Context, bare string) error {
	if _, err := os.Stat(filepath.Join(bare, "HEAD")); err == nil {
		return nil
	}
	if err := os.RemoveAll(bare); err != nil {
		return fmt.Errorf("remove broken cache: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		return err
	}
	_, err := c.git.text(ctx, "init", "--quiet", "--bare", bare)
	return err
}

// removeTempPacks removes the temporary files a fetch that failed or was
// killed left in the pack directory (git index-pack's and go-git's
// tmp_pack_*, tmp_idx_*). The caller holds the exclusive lock, so no fetch
// is writing them.
func removeTempPacks(bare string) {
	tmp, _ := filepath.Glob(filepath.Join(bare, "objects", "pack", "tmp_*"))
	for _, p := range tmp {
		os.Remove(p)
	}
}

// listBranches returns every refs/heads/ branch of s and its commit.
func listBranches(s storer.ReferenceStorer) (map[string]string, error) {
	iter, err := s.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("list branches: %w", err)
	}
	branches := map[string]string{}
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Name().IsBranch() && ref.Type() == plumbing.HashReference {
			branches[ref.Name().Short()] = ref.Hash().String()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list branches: %w", err)
	}
	return branches, nil
}

// maintain repacks the bare repository into one pack when fetches have
// left more than MaxPacks (each go-git fetch writes its own pack), keeping
// unreachable objects: a retried job may still need the base commit of a
// branch that was force-pushed since. The caller holds the exclusive lock,
// so no checkout reads meanwhile.
func (c *Cache) maintain(ctx context.Context, bare string) error {
	packs, err := filepath.Glob(filepath.Join(bare, "objects", "pack", "*.pack"))
	if err != nil || len(packs) <= c.maxPacks {
		return err
	}
	g := gitRunner{gitDir: bare, home: c.home, timeout: c.git.timeout}
	_, err = g.text(ctx, "repack", "-a", "-d", "-q", "--keep-unreachable", "--no-write-bitmap-index")
	return err
}

// Checkout makes a job's working copy of commit from the cached repository
// of repo (see NewWorkTreeFromBare), holding the repository's lock shared so
// no fetch rewrites the cache meanwhile.
func (c *Cache) Checkout(ctx context.Context, repo, commit string, o WorkTreeOptions) (*WorkTree, error) {
	bare, lockPath, err := c.paths(repo)
	if err != nil {
		return nil, fmt.Errorf("checkout: %w", err)
	}
	lock, err := lockFile(ctx, lockPath, true)
	if err != nil {
		return nil, fmt.Errorf("checkout %s: %w", repo, err)
	}
	defer lock.Unlock()
	if _, err := os.Stat(filepath.Join(bare, "HEAD")); err != nil {
		return nil, fmt.Errorf("checkout %s: not in the cache; fetch it first", repo)
	}
	return NewWorkTreeFromBare(ctx, bare, commit, o)
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
