package workspace

import (
	"context"
	"fmt"
)

// ApplyPatch applies patch (as WorkTree.Diff returns it: binary-safe, with
// renames) to the working copy of w with the worker's own git, as a retried
// job does to publish a result its agent produced in an earlier attempt. The
// working copy must be at the patch's base. An empty patch changes nothing.
func ApplyPatch(ctx context.Context, w *WorkTree, patch string) error {
	if patch == "" {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.git.run(ctx, []byte(patch), 1<<20, nil, "apply", "--binary", "--whitespace=nowarn", "-"); err != nil {
		return fmt.Errorf("apply patch: %w", err)
	}
	return nil
}
