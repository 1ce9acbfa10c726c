package workspace

import (
	"context"
	"errors"
	"fmt"
)

// WithTree runs fn with the working copy holding the tree of commit
// instead of the base commit's — for setup in a round on a branch the
// agent wrote, which must run only what people with write access wrote —
// then puts the base commit's files back (after Merge, the merged files,
// conflict markers and all): files of commit that the base lacks are
// removed, the base's own are written again as they were, and what fn
// made that git does not track (dependencies, build outputs) stays. It
// must run before the working copy is changed, but by Merge; commit must
// be in the private git dir (the repository cache's objects are).
func (w *WorkTree) WithTree(ctx context.Context, commit string, fn func() error) error {
	if !commitID.MatchString(commit) {
		return fmt.Errorf("work tree: %q is not a full commit id", commit)
	}
	w.mu.Lock()
	back := w.base
	if w.mergeTree != "" {
		back = w.mergeTree
	}
	w.mu.Unlock()
	if commit == back {
		return fn()
	}
	w.mu.Lock()
	_, err := w.git.text(ctx, "read-tree", "-u", "--reset", commit)
	w.mu.Unlock()
	if err != nil {
		return fmt.Errorf("work tree: check out %s: %w", commit, err)
	}
	ferr := fn()
	w.mu.Lock()
	_, err = w.git.text(context.WithoutCancel(ctx), "read-tree", "-u", "--reset", back)
	w.mu.Unlock()
	if err != nil {
		err = fmt.Errorf("%w: work tree: put the base commit's files back: %w", ErrSandboxDead, err)
	}
	return errors.Join(ferr, err)
}
