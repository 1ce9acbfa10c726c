package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/workspace"
)

// checkout is the workspace step: it fetches a job's repository into the
// host's cache with a token scoped to it, and makes the job's working copy
// of a commit in AGENTFIX_DATA_DIR/jobs/<run_id>.
type checkout struct {
	cache   RepoCache
	inst    Installations
	jobsDir string
	// disk, when set, puts each working copy and cache on a job disk of
	// its own, whose size and inodes the kernel limits.
	disk *workspace.JobDiskOptions
}

// fetched is the repository as the job's fetch left it in the cache.
type fetched struct {
	info ghapp.Repository
	// branches are the repository's branches and their commits.
	branches map[string]string
}

// fetch reads the repository and fetches it into the cache.
func (c *checkout) fetch(ctx context.Context, j *job) (fetched, error) {
	info, err := j.gh.GetRepository(ctx, j.repo)
	if err != nil {
		return fetched{}, err
	}
	if info.CloneURL == "" {
		info.CloneURL = j.clone.CloneURL
	}
	tok, err := c.inst.Token(ctx, j.install, j.repo)
	if err != nil {
		return fetched{}, err
	}
	f, err := c.cache.Fetch(ctx, j.repo.String(), workspace.Remote{URL: info.CloneURL, Token: tok.Value})
	if err != nil {
		return fetched{}, err
	}
	return fetched{info: info, branches: f.Branches}, nil
}

// branchHead returns the commit of branch in f.
func (f fetched) branchHead(j *job, branch string) (string, error) {
	if c := f.branches[branch]; c != "" {
		return c, nil
	}
	return "", fmt.Errorf("branch %s of %s is not on the git server", branch, j.repo)
}

// workTree makes the job's working copy of base on its branch (with the
// sandbox cache next to it), replacing what a crashed attempt of the same
// run left there; remove deletes it.
func (c *checkout) workTree(ctx context.Context, j *job, base string) (wt *workspace.WorkTree, remove func(), err error) {
	dir := filepath.Join(c.jobsDir, j.runID())
	if err := workspace.RemoveJobDir(dir); err != nil {
		return nil, nil, fmt.Errorf("clear job directory: %w", err)
	}
	if err := os.MkdirAll(c.jobsDir, 0o700); err != nil {
		return nil, nil, err
	}
	wt, err = c.cache.Checkout(ctx, j.repo.String(), base, workspace.WorkTreeOptions{Dir: dir, Branch: j.branch, Logger: j.log, Disk: c.disk})
	if err != nil {
		return nil, nil, err
	}
	return wt, func() {
		if err := wt.Remove(); err != nil {
			j.log.Warn("remove working copy", logattr.Err, err)
		}
	}, nil
}
