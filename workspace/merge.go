package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// MergeResult is what Merge left in the working copy.
type MergeResult struct {
	// MergeBase is the merge base of the two sides.
	MergeBase string
	// Conflicts are the files that conflict, in path order, each with
	// conflict markers in the working copy.
	Conflicts []MergeConflict
}

// MergeConflict is a file both sides of a merge changed in ways git could
// not merge.
type MergeConflict struct {
	Path string
	// Ours and Theirs are the changes of the working copy's side (the
	// base commit) and of the merged commit to the file since the merge
	// base, as diffs cut to the caller's limit; empty for a side that
	// deleted or did not change it.
	Ours, Theirs string
}

// Merge merges commit into the working copy as `git merge --no-commit`
// would, with the private git dir and git's own merge (merge-ort): the
// working copy becomes the merged tree, in which every file that
// conflicts holds conflict markers in diff3 style (the merge base's text
// between ||||||| and =======; the working copy's side is labelled HEAD,
// the other commit), for the caller to have them resolved. The next Commit
// records commit as its second parent. The working copy must be as the
// checkout left it. maxSide bounds each side's diff of a conflicting file.
func (w *WorkTree) Merge(ctx context.Context, commit string, maxSide int) (MergeResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	theirs, err := w.git.text(ctx, "rev-parse", "--verify", "--end-of-options", commit+"^{commit}")
	if err != nil {
		return MergeResult{}, fmt.Errorf("merge %s: %w", commit, err)
	}
	base, err := w.git.text(ctx, "merge-base", "HEAD", theirs)
	if err != nil {
		return MergeResult{}, fmt.Errorf("merge %s: no merge base: %w", commit, err)
	}
	tree, paths, err := w.writeMergeTree(ctx, theirs)
	if err != nil {
		return MergeResult{}, fmt.Errorf("merge %s: %w", commit, err)
	}
	// A two-way read-tree moves the index and the files from HEAD to the
	// merged tree, deleting what the merge deleted.
	if _, err := w.git.text(ctx, "read-tree", "-m", "-u", "HEAD", tree); err != nil {
		return MergeResult{}, fmt.Errorf("merge %s: %w", commit, err)
	}
	res := MergeResult{MergeBase: base}
	for _, p := range paths {
		c := MergeConflict{Path: p}
		if c.Ours, err = w.sideDiff(ctx, base, "HEAD", p, maxSide); err == nil {
			c.Theirs, err = w.sideDiff(ctx, base, theirs, p, maxSide)
		}
		if err != nil {
			return MergeResult{}, fmt.Errorf("merge %s: %w", commit, err)
		}
		res.Conflicts = append(res.Conflicts, c)
	}
	w.mergeHead, w.mergeTree = theirs, tree
	return res, nil
}

// writeMergeTree runs git merge-tree of HEAD and theirs and returns the merged
// tree (conflicted files with their markers) and the paths that
// conflict. The caller holds w.mu.
func (w *WorkTree) writeMergeTree(ctx context.Context, theirs string) (string, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, w.git.timeout)
	defer cancel()
	args := []string{"-c", "merge.conflictStyle=diff3", "merge-tree", "--write-tree", "-z", "--name-only", "HEAD", theirs}
	cmd, stdout, stderr := w.git.command(ctx, 64<<20, nil, args...)
	err := cmd.Run()
	var exit *exec.ExitError
	conflicted := errors.As(err, &exit) && exit.ExitCode() == 1 && !stdout.over
	if err != nil && !conflicted {
		return "", nil, w.git.result(ctx, err, stdout, stderr, args)
	}
	// The tree, then (with conflicts) the conflicted paths up to an empty
	// field, then git's messages.
	fields := bytes.Split(stdout.Bytes(), []byte{0})
	tree := strings.TrimSpace(string(fields[0]))
	if !commitID.MatchString(tree) {
		return "", nil, fmt.Errorf("git merge-tree printed no tree: %q", stdout.Bytes())
	}
	var paths []string
	if conflicted {
		for _, f := range fields[1:] {
			if len(f) == 0 {
				break
			}
			paths = append(paths, string(f))
		}
	}
	return tree, paths, nil
}

// sideDiff is the diff of path from base to commit, cut to max bytes.
func (w *WorkTree) sideDiff(ctx context.Context, base, commit, path string, max int) (string, error) {
	out, err := w.git.run(ctx, nil, w.maxDiff, nil, "diff", "--no-ext-diff", "--no-textconv", "--no-color",
		"--src-prefix=a/", "--dst-prefix=b/", base, commit, "--", ":(top,literal)"+path)
	if err != nil {
		return "", err
	}
	if len(out) > max {
		return strings.ToValidUTF8(string(out[:max]), "") + fmt.Sprintf("\n… (cut: %d more bytes)\n", len(out)-max), nil
	}
	return string(out), nil
}

// RecordMerge makes the next Commit record commit as its second parent
// without merging anything: for a working copy that already holds a
// merge's result, as a retry that applies a saved change does.
func (w *WorkTree) RecordMerge(ctx context.Context, commit string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	theirs, err := w.git.text(ctx, "rev-parse", "--verify", "--end-of-options", commit+"^{commit}")
	if err != nil {
		return fmt.Errorf("record the merge of %s: %w", commit, err)
	}
	w.mergeHead = theirs
	return nil
}
