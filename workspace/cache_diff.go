package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// maxRangeDiff bounds the diff git may print for Cache.Diff before it is
// cut to the caller's limit.
const maxRangeDiff = 64 << 20

// RangeDiff is the change a branch made since it left another, as a pull
// request shows it.
type RangeDiff struct {
	// MergeBase is the commit the diff starts from: the merge base of the
	// two commits.
	MergeBase string
	// Patch is the diff from MergeBase to the head commit; when Truncated
	// it was cut after a whole line to stay within the caller's limit.
	Patch     string
	Truncated bool
}

// Diff returns the change from the merge base of base and head to head —
// `git diff base...head`, what a pull request of head into base shows —
// computed in the cached bare repository of repo with the worker's own git
// (no external diff, no textconv), holding the repository's lock shared.
// base and head are full commit ids a Fetch brought into the cache. The
// patch is cut after a whole line to at most maxBytes bytes.
func (c *Cache) Diff(ctx context.Context, repo, base, head string, maxBytes int) (RangeDiff, error) {
	if !commitID.MatchString(base) || !commitID.MatchString(head) {
		return RangeDiff{}, fmt.Errorf("diff %s: %q...%q are not full commit ids", repo, base, head)
	}
	if maxBytes <= 0 {
		return RangeDiff{}, fmt.Errorf("diff %s: limit %d is not positive", repo, maxBytes)
	}
	bare, lockPath, err := c.paths(repo)
	if err != nil {
		return RangeDiff{}, fmt.Errorf("diff: %w", err)
	}
	lock, err := lockFile(ctx, lockPath, true)
	if err != nil {
		return RangeDiff{}, fmt.Errorf("diff %s: %w", repo, err)
	}
	defer lock.Unlock()
	if _, err := os.Stat(filepath.Join(bare, "HEAD")); err != nil {
		return RangeDiff{}, fmt.Errorf("diff %s: not in the cache; fetch it first", repo)
	}
	g := gitRunner{gitDir: bare, home: c.home, timeout: c.git.timeout}
	mb, err := g.text(ctx, "merge-base", "--end-of-options", base, head)
	if err != nil {
		return RangeDiff{}, fmt.Errorf("diff %s: %w", repo, err)
	}
	out, err := g.run(ctx, nil, maxRangeDiff, nil, "diff", "--find-renames", "--no-ext-diff", "--no-textconv",
		"--no-color", "--src-prefix=a/", "--dst-prefix=b/", mb, head, "--")
	if err != nil {
		return RangeDiff{}, fmt.Errorf("diff %s: %w", repo, err)
	}
	d := RangeDiff{MergeBase: mb, Patch: string(out)}
	if len(out) > maxBytes {
		cut := out[:maxBytes]
		if i := bytes.LastIndexByte(cut, '\n'); i >= 0 {
			cut = cut[:i+1]
		}
		d.Patch, d.Truncated = string(cut), true
	}
	return d, nil
}
