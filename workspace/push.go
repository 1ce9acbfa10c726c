package workspace

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/agentfix/agentfix/internal/logattr"
)

// ErrNonFastForward is wrapped by Push when the branch on the remote is not
// an ancestor of the pushed commit and the push was not forced: someone
// else pushed to the branch since the job fetched it.
var ErrNonFastForward = errors.New("the remote branch moved: not a fast-forward")

// PushOptions describe one push.
type PushOptions struct {
	// Remote is where to push, with a fresh installation token.
	Remote Remote
	// Branch is the branch name without refs/heads/, e.g.
	// "agent-fix/issue-12".
	Branch string
	// Commit is the full id of the commit the branch gets; it must be in the
	// work tree's private git dir (WorkTree.Commit made it, or it is the
	// base).
	Commit string
	// Force lets the push replace a branch that is not an ancestor of
	// Commit. Only a fix job whose branch has no open pull request of the
	// bot forces; a revise job never does.
	Force bool
}

// Push sets refs/heads/<Branch> of the work tree's private git dir to
// Commit and pushes that full ref (never HEAD) to the remote with go-git, in
// process, under the per-branch lock of repo ("owner/name"), so two jobs of
// one host never push the same branch at once. A remote branch already at
// Commit is success. A refused non-forced update wraps ErrNonFastForward.
func (c *Cache) Push(ctx context.Context, repo string, w *WorkTree, p PushOptions) error {
	_, lockPath, err := c.paths(repo)
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	if err := p.Remote.check(); err != nil {
		return fmt.Errorf("push to %s: %w", repo, err)
	}
	if !commitID.MatchString(p.Commit) {
		return fmt.Errorf("push to %s: %q is not a full commit id", repo, p.Commit)
	}
	ref := "refs/heads/" + p.Branch
	if _, err := w.git.text(ctx, "check-ref-format", ref); err != nil || p.Branch == "" || strings.HasPrefix(p.Branch, "-") {
		return fmt.Errorf("push to %s: branch name %q is not valid", repo, p.Branch)
	}
	lock, err := lockFile(ctx, branchLockPath(lockPath, p.Branch), false)
	if err != nil {
		return fmt.Errorf("push %s to %s: %w", p.Branch, repo, err)
	}
	defer lock.Unlock()
	if err := w.setRef(ctx, ref, p.Commit); err != nil {
		return fmt.Errorf("push %s to %s: %w", p.Branch, repo, err)
	}
	gr, err := git.PlainOpen(w.GitDir())
	if err != nil {
		return fmt.Errorf("push %s to %s: open private git dir: %w", p.Branch, repo, err)
	}
	spec := ref + ":" + ref
	if p.Force {
		spec = "+" + spec
	}
	start := time.Now()
	remote := git.NewRemote(gr.Storer, &gitconfig.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{p.Remote.URL}})
	var pctx context.Context
	for attempt := 1; ; attempt++ {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, c.timeout)
		err = remote.PushContext(pctx, &git.PushOptions{
			RefSpecs: []gitconfig.RefSpec{gitconfig.RefSpec(spec)},
			Auth:     p.Remote.auth(),
		})
		cancel()
		wait, again := pushRetry(err, attempt)
		if !again || ctx.Err() != nil {
			break
		}
		c.log.Info(fmt.Sprintf("push of %s to %s failed (attempt %d of %d); trying again in %s", p.Branch, repo, attempt, pushAttempts, wait),
			logattr.Err, err)
		if serr := c.sleep(ctx, wait); serr != nil {
			break
		}
	}
	switch {
	case errors.Is(err, git.NoErrAlreadyUpToDate):
	case err != nil && strings.Contains(err.Error(), "non-fast-forward"):
		return fmt.Errorf("push %s to %s: %w (%w)", p.Branch, repo, ErrNonFastForward, err)
	case err != nil:
		if pctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, context.Cause(pctx))
		}
		return fmt.Errorf("push %s to %s at %s: %w", p.Branch, repo, p.Remote.URL, err)
	}
	c.log.Debug("pushed", logattr.Repo, repo, logattr.Action, spec, logattr.Duration, time.Since(start))
	return nil
}

// pushAttempts bounds the tries of one push.
const pushAttempts = 4

// maxPushWait bounds the wait between two tries, whatever Retry-After says.
const maxPushWait = time.Minute

// pushRetry says whether a push that failed with err on attempt (from 1)
// is tried again, and after how long: a 5xx or 429 answer of the git
// server (after its Retry-After, when it gives one) and a connection that
// failed are, up to pushAttempts tries, backing off 1 s, 2 s, 4 s; a
// refusal (401, 403, 404, non-fast-forward) never is. Trying again is
// safe: the same commit to the same ref, and a push that landed before its
// answer was lost finds the branch already there.
func pushRetry(err error, attempt int) (time.Duration, bool) {
	if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) || attempt >= pushAttempts {
		return 0, false
	}
	wait := time.Second << (attempt - 1)
	var ue *plumbing.UnexpectedError
	var he *githttp.Err
	switch {
	case errors.As(err, &ue) && errors.As(ue.Err, &he) && he.Response != nil:
		code := he.Response.StatusCode
		if code != http.StatusTooManyRequests && code < 500 {
			return 0, false
		}
		if d, ok := retryAfter(he.Response.Header.Get("Retry-After")); ok {
			wait = d
		}
		return min(wait, maxPushWait), true
	case isConnectionError(err):
		return wait, true
	}
	return 0, false
}

// retryAfter reads a Retry-After header in seconds.
func retryAfter(v string) (time.Duration, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

// isConnectionError reports whether err is a network failure before any
// answer: refused, reset, timed out.
func isConnectionError(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &oe) || errors.As(err, &ne) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// branchLockPath is the lock file of branch next to the repository's lock.
func branchLockPath(repoLock, branch string) string {
	return filepath.Join(strings.TrimSuffix(repoLock, ".lock")+".branches", url.PathEscape(branch)+".lock")
}

// setRef points ref of the private git dir at commit, with the worker's
// own git (no hooks, no repository config).
func (w *WorkTree) setRef(ctx context.Context, ref, commit string) error {
	g := gitRunner{gitDir: w.git.gitDir, home: w.git.home, timeout: w.git.timeout}
	if _, err := g.text(ctx, "update-ref", "--no-deref", ref, commit); err != nil {
		return fmt.Errorf("set %s: %w", ref, err)
	}
	return nil
}
