package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/agentfix/agentfix/internal/logattr"
)

// Defaults of WorkTreeOptions.
const (
	DefaultBranch       = "agentfix"
	DefaultGitTimeout   = 5 * time.Minute
	DefaultMaxDiffBytes = 16 << 20
)

// baseRef is where the private git dir keeps the recorded base commit.
const baseRef = "refs/agentfix/base"

// WorkTreeOptions configure a job's working copy.
type WorkTreeOptions struct {
	// Dir is the job directory; it must not exist yet or be empty. It
	// receives the working copy (workspace/), the private git dir (git/),
	// the sandbox cache (cache/) and an empty HOME for git (githome/).
	// With Disk, the working copy and the cache are disk/workspace and
	// disk/cache instead.
	Dir string
	// Disk, when set, puts the working copy and the sandbox cache on a job
	// disk of this size (NewJobDisk at Dir/disk), so that the kernel
	// limits their size and inodes; the private git dir stays outside it,
	// so a full disk leaves the worker able to diff and commit. Remove
	// unmounts it. Give the sandbox Options.OnJobDisk (OnJobDisk).
	Disk *JobDiskOptions
	// Branch is the branch checked out in the working copy's own .git.
	Branch string
	// GitTimeout bounds every git command.
	GitTimeout time.Duration
	// MaxDiffBytes bounds the diff Diff returns.
	MaxDiffBytes int64
	// Logger receives debug records; nil discards them.
	Logger *slog.Logger
}

// WorkTree is one job's working copy and the private git directory the
// worker diffs and commits with. The working copy has its own ordinary .git
// (so the agent can run git in the sandbox) which the worker never reads;
// the private git dir lives outside the working copy, is never mounted in a
// sandbox, and shares no file with any other repository (no alternates, no
// hardlinks). Diff, Changes and Commit compare the working copy with the
// base commit recorded at creation, whatever the agent did to its .git.
// A WorkTree is safe for concurrent use.
type WorkTree struct {
	dir, work, cache string
	onJobDisk        bool
	base             string
	git              gitRunner // private git dir + work tree
	maxDiff          int64
	log              *slog.Logger
	mu               sync.Mutex // serializes use of the private index
	// mergeHead is the second parent of the next Commit (Merge,
	// RecordMerge); empty when it is no merge. mergeTree is the tree
	// Merge left in the working copy, which WithTree puts back.
	mergeHead, mergeTree string
}

var commitID = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// NewWorkTreeFromRepo makes a working copy of the commit at HEAD of the
// local repository src (a checkout or a bare repository), as `bot fix`
// does. Uncommitted changes in src are not copied, and src is never written.
func NewWorkTreeFromRepo(ctx context.Context, src string, o WorkTreeOptions) (*WorkTree, error) {
	abs, err := filepath.Abs(src)
	if err != nil {
		return nil, fmt.Errorf("work tree from %s: %w", src, err)
	}
	w, err := newWorkTree(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("work tree from %s: %w", src, err)
	}
	objects := func() (string, error) { return w.fetchHead(ctx, abs) }
	if err := w.fill(ctx, objects, o.Branch); err != nil {
		return nil, fmt.Errorf("work tree from %s: %w", src, err)
	}
	return w, nil
}

// NewWorkTreeFromBare makes a working copy of commit (a full object id)
// from the bare repository bare, such as the repository cache, which the
// caller keeps from being repacked meanwhile. The private git dir and the
// working copy's .git each get a copy of every object of bare (its packs
// and loose objects, copied as files, not fetched): the whole history of
// every branch, at the cost of copying the packs rather than of packing
// and indexing every object again.
func NewWorkTreeFromBare(ctx context.Context, bare, commit string, o WorkTreeOptions) (*WorkTree, error) {
	if !commitID.MatchString(commit) {
		return nil, fmt.Errorf("work tree from %s: %q is not a full commit id", bare, commit)
	}
	abs, err := filepath.Abs(bare)
	if err != nil {
		return nil, fmt.Errorf("work tree from %s: %w", bare, err)
	}
	w, err := newWorkTree(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("work tree from %s: %w", bare, err)
	}
	objects := func() (string, error) { return commit, copyObjects(abs, w.git.gitDir) }
	if err := w.fill(ctx, objects, o.Branch); err != nil {
		return nil, fmt.Errorf("work tree from %s at %s: %w", bare, commit, err)
	}
	return w, nil
}

// newWorkTree creates the job directory layout and the private git dir.
func newWorkTree(ctx context.Context, o WorkTreeOptions) (*WorkTree, error) {
	if o.Dir == "" {
		return nil, errors.New("job directory is required")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("job directory %s is not empty", dir)
	}
	if o.GitTimeout <= 0 {
		o.GitTimeout = DefaultGitTimeout
	}
	if o.MaxDiffBytes <= 0 {
		o.MaxDiffBytes = DefaultMaxDiffBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w := &WorkTree{
		dir:     dir,
		work:    filepath.Join(dir, "workspace"),
		cache:   filepath.Join(dir, "cache"),
		maxDiff: o.MaxDiffBytes,
		log:     o.Logger,
	}
	if err := w.makeDirs(ctx, o); err != nil {
		if rerr := w.Remove(); rerr != nil {
			w.log.Warn("remove job directory after a failed checkout", logattr.Err, rerr)
		}
		return nil, err
	}
	return w, nil
}

// makeDirs makes the job directory's layout, with the job disk when o
// asks for one, and the private git dir.
func (w *WorkTree) makeDirs(ctx context.Context, o WorkTreeOptions) error {
	if o.Disk != nil {
		disk, err := NewJobDisk(ctx, filepath.Join(w.dir, "disk"), *o.Disk)
		if err != nil {
			return err
		}
		w.work, w.cache, w.onJobDisk = filepath.Join(disk.Dir(), "workspace"), filepath.Join(disk.Dir(), "cache"), true
	}
	home := filepath.Join(w.dir, "githome")
	for _, d := range []string{w.work, w.cache, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	private := filepath.Join(w.dir, "git")
	w.git = gitRunner{gitDir: private, workTree: w.work, home: home, timeout: o.GitTimeout}
	initGit := gitRunner{home: home, timeout: o.GitTimeout}
	_, err := initGit.text(ctx, "init", "--quiet", "--bare", private)
	return err
}

// fill puts the objects of the base commit in the private git dir (objects
// returns the base commit), records the base and checks it out; on failure
// it removes the job directory.
func (w *WorkTree) fill(ctx context.Context, objects func() (string, error), branch string) error {
	base, err := objects()
	if err == nil {
		err = w.recordBase(ctx, base)
	}
	if err == nil {
		err = w.checkout(ctx, branch)
	}
	if err != nil {
		if rerr := w.Remove(); rerr != nil {
			w.log.Warn("remove job directory after a failed checkout", logattr.Err, rerr)
		}
		return err
	}
	return nil
}

// fetchHead fetches the commit at HEAD of the local repository src into
// the private git dir and returns it. A fetch copies objects into a new
// pack (or loose objects): nothing is hardlinked or borrowed, whatever src
// borrows itself.
func (w *WorkTree) fetchHead(ctx context.Context, src string) (string, error) {
	fetch := gitRunner{gitDir: w.git.gitDir, home: w.git.home, timeout: w.git.timeout}
	if _, err := fetch.text(ctx, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", src, "+HEAD:"+baseRef); err != nil {
		return "", err
	}
	return fetch.text(ctx, "rev-parse", "--verify", "--end-of-options", baseRef)
}

// recordBase checks that base is a commit of the private git dir and
// points the base ref and the private HEAD at it.
func (w *WorkTree) recordBase(ctx context.Context, base string) error {
	g := gitRunner{gitDir: w.git.gitDir, home: w.git.home, timeout: w.git.timeout}
	commit, err := g.text(ctx, "rev-parse", "--verify", "--end-of-options", base+"^{commit}")
	if err != nil {
		return fmt.Errorf("base commit %s: %w", base, err)
	}
	w.base = commit
	updates := fmt.Sprintf("update %s %s\nupdate HEAD %s\n", baseRef, commit, commit)
	_, err = g.run(ctx, []byte(updates), 1<<10, nil, "update-ref", "--no-deref", "--stdin")
	return err
}

// checkout fills the working copy from the private git dir, with git's
// parallel checkout, and gives it its own .git: a copy of the private git
// dir's objects and of the index the checkout wrote, with branch checked
// out at the base commit.
func (w *WorkTree) checkout(ctx context.Context, branch string) error {
	if branch == "" {
		branch = DefaultBranch
	}
	if _, err := w.git.text(ctx, "check-ref-format", "--branch", branch); err != nil {
		return fmt.Errorf("branch name %q: %w", branch, err)
	}
	workers := "checkout.workers=" + strconv.Itoa(checkoutWorkers())
	if _, err := w.git.text(ctx, "-c", workers, "reset", "--quiet", "--hard", w.base); err != nil {
		return err
	}
	own := gitRunner{home: w.git.home, timeout: w.git.timeout}
	if _, err := own.text(ctx, "init", "--quiet", "--initial-branch="+branch, w.work); err != nil {
		return err
	}
	dotGit := filepath.Join(w.work, ".git")
	if err := copyObjects(w.git.gitDir, dotGit); err != nil {
		return err
	}
	own = gitRunner{gitDir: dotGit, home: w.git.home, timeout: w.git.timeout}
	if _, err := own.text(ctx, "update-ref", "refs/heads/"+branch, w.base); err != nil {
		return err
	}
	// The index describes the files of the working copy, whichever git
	// dir holds it.
	return copyFile(filepath.Join(w.git.gitDir, "index"), filepath.Join(dotGit, "index"), 0o644)
}

// checkoutWorkers is how many processes git's parallel checkout uses:
// four per CPU the worker may use, at most 32. Writing many small files is
// bound by the file system's latency more than by the CPU, so more workers
// than CPUs pay off: on a 2-CPU virtio disk, while it was slow, a
// 20,000-file checkout took 3.0–7.8 s with one worker and 0.5–3.5 s with
// eight; on tmpfs, where the CPU bounds it, eight took 0.47–0.58 s and one
// 0.60–0.66 s (BENCHMARKS.md, "Repository cache").
func checkoutWorkers() int {
	return min(4*runtime.GOMAXPROCS(0), 32)
}

// Dir is the host path of the working copy, to mount at /workspace.
func (w *WorkTree) Dir() string { return w.work }

// CacheDir is the host path of the job's sandbox cache, to mount at /cache.
func (w *WorkTree) CacheDir() string { return w.cache }

// GitDir is the host path of the private git dir; never give it to a
// sandbox.
func (w *WorkTree) GitDir() string { return w.git.gitDir }

// Base is the commit the job started from; Diff and Changes compare with it.
func (w *WorkTree) Base() string { return w.base }

// OnJobDisk reports whether the working copy and the cache are on a job
// disk (WorkTreeOptions.Disk), for Options.OnJobDisk.
func (w *WorkTree) OnJobDisk() bool { return w.onJobDisk }

// Remove deletes the job directory, including files the sandbox made
// unreadable, after unmounting its job disk (RemoveJobDir).
func (w *WorkTree) Remove() error {
	return RemoveJobDir(w.dir)
}
