package workspace

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// stage records every file of the working copy in the private index: new,
// changed and deleted files, respecting the .gitignore files of the working
// copy (as `git add -A` does, so build outputs and dependencies the
// repository ignores stay out). Nothing else is excluded but .git
// directories and the nested repositories that contain one (git can only
// record those as submodule links, and refuses one without a commit); it
// returns their paths. The caller holds w.mu.
func (w *WorkTree) stage(ctx context.Context) ([]string, error) {
	if _, err := os.Stat(w.work); err != nil {
		return nil, fmt.Errorf("%w: working copy: %w", ErrSandboxDead, err)
	}
	nested := nestedRepos(w.work)
	args := []string{"add", "--all", "--", "."}
	for _, dir := range nested {
		args = append(args, ":(top,literal,exclude)"+dir)
	}
	_, err := w.git.text(ctx, args...)
	return nested, err
}

// nestedRepos returns the slash-separated paths, relative to root, of the
// directories below root that hold a .git entry.
func nestedRepos(root string) []string {
	var nested []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p == root {
			return nil
		}
		if d.Name() == ".git" {
			return fs.SkipDir
		}
		if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
			rel, _ := filepath.Rel(root, p)
			nested = append(nested, filepath.ToSlash(rel))
			return fs.SkipDir
		}
		return nil
	})
	return nested
}

// Diff returns the patch from the base commit to the working copy: every
// change including new files, binary-safe (`--binary`), with renames
// detected, computed with the private git dir (no external diff, no
// textconv). It is empty when nothing changed.
func (w *WorkTree) Diff(ctx context.Context) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.stage(ctx); err != nil {
		return "", fmt.Errorf("diff: %w", err)
	}
	out, err := w.git.run(ctx, nil, w.maxDiff, nil, "diff", "--cached", "--binary", "--find-renames",
		"--no-ext-diff", "--no-textconv", "--no-color", "--src-prefix=a/", "--dst-prefix=b/", w.base, "--")
	if err != nil {
		return "", fmt.Errorf("diff: %w", err)
	}
	return string(out), nil
}

// Head returns the commit at the private HEAD: the base commit, or the
// last commit Commit made.
func (w *WorkTree) Head(ctx context.Context) (string, error) {
	head, err := w.git.text(ctx, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", fmt.Errorf("head: %w", err)
	}
	return head, nil
}

// Changes summarizes the change from the base commit to the working copy;
// see Changes.
func (w *WorkTree) Changes(ctx context.Context) (Changes, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	nested, err := w.stage(ctx)
	if err != nil {
		return Changes{}, fmt.Errorf("changes: %w", err)
	}
	out, err := w.git.run(ctx, nil, 64<<20, nil, "diff", "--cached", "--raw", "-z", "--no-renames", "--no-abbrev",
		"--no-ext-diff", "--no-textconv", w.base, "--")
	if err != nil {
		return Changes{}, fmt.Errorf("changes: %w", err)
	}
	entries, err := parseRaw(string(out))
	if err != nil {
		return Changes{}, fmt.Errorf("changes: %w", err)
	}
	var c Changes
	var linkPaths, linkBlobs []string
	for _, e := range entries {
		c.add(e.status, e.path)
		if e.newMode == symlinkMode && e.status != "D" {
			linkPaths, linkBlobs = append(linkPaths, e.path), append(linkBlobs, e.newBlob)
		}
	}
	c.NestedRepos = nested
	if len(linkPaths) == 0 {
		return c, nil
	}
	links, err := w.indexSymlinks(ctx)
	if err != nil {
		return Changes{}, fmt.Errorf("changes: symlinks: %w", err)
	}
	targets, err := w.blobs(ctx, linkBlobs)
	if err != nil {
		return Changes{}, fmt.Errorf("changes: symlinks: %w", err)
	}
	lookup := func(p string) (string, bool) { t, ok := links[p]; return t, ok }
	for i, p := range linkPaths {
		if s, bad := classifySymlink(p, targets[i], lookup); bad {
			c.addSymlink(s)
		}
	}
	return c, nil
}
