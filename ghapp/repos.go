package ghapp

import (
	"context"
	"fmt"

	"github.com/google/go-github/v66/github"
)

// GetRepository returns repo's metadata: default branch, clone URL, …
func (c *Client) GetRepository(ctx context.Context, repo Repo) (Repository, error) {
	r, _, err := c.gh.Repositories.Get(ctx, repo.Owner, repo.Name)
	if err != nil {
		return Repository{}, fmt.Errorf("get repository %s: %w", repo, apiError(err))
	}
	return toRepository(r), nil
}

// GetContents returns the file at path of repo at ref (a branch, tag or
// commit; empty for the default branch). A missing file or ref is
// ErrNotFound; a directory is an error.
func (c *Client) GetContents(ctx context.Context, repo Repo, path, ref string) ([]byte, error) {
	file, dir, _, err := c.gh.Repositories.GetContents(ctx, repo.Owner, repo.Name, path, &github.RepositoryContentGetOptions{Ref: ref})
	if err != nil {
		return nil, fmt.Errorf("get %s of %s at %q: %w", path, repo, ref, apiError(err))
	}
	if file == nil {
		return nil, fmt.Errorf("get %s of %s at %q: is a directory of %d entries, not a file", path, repo, ref, len(dir))
	}
	if file.GetType() != "file" {
		return nil, fmt.Errorf("get %s of %s at %q: is a %s, not a file", path, repo, ref, file.GetType())
	}
	s, err := file.GetContent()
	if err != nil {
		return nil, fmt.Errorf("get %s of %s at %q: decode: %w", path, repo, ref, err)
	}
	return []byte(s), nil
}

// BranchHead returns the commit branch of repo points at; a missing branch
// is ErrNotFound.
func (c *Client) BranchHead(ctx context.Context, repo Repo, branch string) (string, error) {
	ref, _, err := c.gh.Git.GetRef(ctx, repo.Owner, repo.Name, "heads/"+branch)
	if err != nil {
		return "", fmt.Errorf("get branch %s of %s: %w", branch, repo, apiError(err))
	}
	return ref.GetObject().GetSHA(), nil
}
