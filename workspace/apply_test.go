package workspace

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestApplyPatchReproducesTheCommit applies one working copy's diff to a
// second copy of the same base: the diff and a commit made with the same
// identity and time are identical, which is what lets a retried job push
// the very commit an earlier attempt pushed.
func TestApplyPatchReproducesTheCommit(t *testing.T) {
	src, _ := newSourceRepo(t)
	ctx := context.Background()
	first, err := NewWorkTreeFromRepo(ctx, src, WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "first")})
	if err != nil {
		t.Fatal(err)
	}
	agentEdits(t, first)
	patch, err := first.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second, err := NewWorkTreeFromRepo(ctx, src, WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "second")})
	if err != nil {
		t.Fatal(err)
	}
	if err := ApplyPatch(ctx, second, patch); err != nil {
		t.Fatalf("ApplyPatch: %v", err)
	}
	again, err := second.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(patch, again); diff != "" {
		t.Errorf("diff after ApplyPatch (-first +second):\n%s", diff)
	}
	opts := CommitOptions{Message: "Fix #1", Author: Identity{Name: "bot", Email: "bot@example.com"},
		Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	a, err := first.Commit(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := second.Commit(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("commits differ: %s and %s, want the same id", a, b)
	}
	if err := ApplyPatch(ctx, second, patch); err == nil {
		t.Errorf("applying the patch twice succeeded, want an error")
	}
	if err := ApplyPatch(ctx, second, ""); err != nil {
		t.Errorf("ApplyPatch of an empty patch = %v, want nil", err)
	}
}
