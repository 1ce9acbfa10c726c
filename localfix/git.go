package localfix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfix/agentfix/internal/proc"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// Bounds of the git commands bot fix runs in the user's repository.
const (
	userGitTimeout   = 2 * time.Minute
	userGitMaxOutput = 16 << 20
	userGitStderr    = 8 << 10
)

// userRepo is the user's repository as bot fix found it.
type userRepo struct {
	// dir is the top of the working tree, or the git directory of a bare
	// repository; the work tree is made from it.
	dir  string
	bare bool
	// head is the commit the agent starts from.
	head string
	// dirty lists the paths with uncommitted changes, untracked files
	// included, and modified those of tracked files alone (none for bare).
	dirty, modified []string
	// environ is the environment git runs with.
	environ []string
}

// inspectRepo checks that dir is a git repository with a commit at HEAD
// and notes its top directory and uncommitted changes. git runs there with
// the user's own configuration, as the user's git would; it only reads.
func inspectRepo(ctx context.Context, dir string, environ []string) (*userRepo, error) {
	r := &userRepo{dir: dir, environ: append(environ[:len(environ):len(environ)], "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0")}
	bare, err := r.git(ctx, nil, "rev-parse", "--is-bare-repository")
	if err != nil {
		return nil, fmt.Errorf("%s is not a git repository: %w", dir, err)
	}
	r.bare = bare == "true"
	if r.head, err = r.git(ctx, nil, "rev-parse", "--verify", "--end-of-options", "HEAD^{commit}"); err != nil {
		return nil, fmt.Errorf("%s has no commit at HEAD: %w", dir, err)
	}
	if r.bare {
		r.dir, err = r.git(ctx, nil, "rev-parse", "--absolute-git-dir")
		return r, err
	}
	if r.dir, err = r.git(ctx, nil, "rev-parse", "--show-toplevel"); err != nil {
		return nil, err
	}
	r.dirty, r.modified, err = r.status(ctx)
	return r, err
}

// status lists the paths with uncommitted changes, untracked files
// included, and those of tracked files alone (staged or not), limited to
// paths when any are given.
func (r *userRepo) status(ctx context.Context, paths ...string) (dirty, modified []string, err error) {
	args := []string{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--"}
	for _, p := range paths {
		args = append(args, ":(top,literal)"+p)
	}
	out, err := r.git(ctx, nil, args...)
	if err != nil {
		return nil, nil, err
	}
	for _, entry := range strings.Split(out, "\x00") {
		if len(entry) <= 3 {
			continue
		}
		dirty = append(dirty, entry[3:])
		if entry[:2] != "??" {
			modified = append(modified, entry[3:])
		}
	}
	return dirty, modified, nil
}

// canApply says why --apply cannot apply a patch to the working tree, when
// it cannot: a bare repository has none, and one with uncommitted changes
// to tracked files may have them in a file the patch touches, which is
// known only after the run. Untracked files are checked after the run,
// against the patch's files.
func (r *userRepo) canApply() error {
	if r.bare {
		return fmt.Errorf("%s is a bare repository; it has no working tree to apply the patch to", r.dir)
	}
	if len(r.modified) > 0 {
		return fmt.Errorf("%s has uncommitted changes in %s; the patch is known only after the run, so commit or stash them first, or run without --apply and apply patch.diff yourself", r.dir, listPaths(r.modified))
	}
	return nil
}

// fileAtHead returns the content of the regular file at path (slash
// separated, from the top) in the commit at HEAD; false when there is none.
// A symbolic link or a directory there is an error: its target is never
// followed.
func (r *userRepo) fileAtHead(ctx context.Context, path string) ([]byte, bool, error) {
	entry, err := r.git(ctx, nil, "ls-tree", "--full-tree", r.head, "--", path)
	if err != nil {
		return nil, false, err
	}
	if entry == "" {
		return nil, false, nil
	}
	meta, _, _ := strings.Cut(entry, "\t")
	f := strings.Fields(meta) // mode, type, object id
	if len(f) != 3 || f[1] != "blob" || (f[0] != "100644" && f[0] != "100755") {
		return nil, false, fmt.Errorf("%s at HEAD is not a regular file", path)
	}
	content, err := r.git(ctx, nil, "cat-file", "blob", f[2])
	return []byte(content), true, err
}

// apply applies patch to the working tree (not the index) after checking
// that none of the files it touches has uncommitted changes and that it
// applies cleanly, so the user's work is never overwritten.
func (r *userRepo) apply(ctx context.Context, patch string, touched []string) error {
	if r.bare {
		return errors.New("a bare repository has no working tree")
	}
	dirty, _, err := r.status(ctx, touched...)
	if err != nil {
		return err
	}
	if len(dirty) > 0 {
		return fmt.Errorf("%s has uncommitted changes in %s, which the patch touches; commit, stash or remove them, then apply the patch with git apply", r.dir, listPaths(dirty))
	}
	links, err := workspace.PatchSymlinks(patch, r.linkAtHead(ctx))
	if err != nil {
		return fmt.Errorf("read the patch's symbolic links: %w", err)
	}
	if refused := tools.RefusedSymlinks(links); len(refused) > 0 {
		return fmt.Errorf("the patch holds symbolic links that are never applied: %s", strings.Join(refused, "; "))
	}
	if _, err := r.git(ctx, []byte(patch), "apply", "--check", "-"); err != nil {
		return fmt.Errorf("the patch does not apply to %s (HEAD moved?): %w", r.dir, err)
	}
	if _, err := r.git(ctx, []byte(patch), "apply", "-"); err != nil {
		return err
	}
	return nil
}

// git runs git in the repository with stdin, a timeout, capped output and
// its process group killed on cancel; it returns stdout without the final
// newline.
func (r *userRepo) git(ctx context.Context, stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, userGitTimeout)
	defer cancel()
	cmd := proc.Command(ctx, nil, append([]string{"git", "-C", r.dir}, args...)...)
	cmd.Env = r.environ
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	stdout := workspace.NewHeadTail(userGitMaxOutput)
	stderr := workspace.NewHeadTail(userGitStderr)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", args[0], firstLines(msg, 3))
	}
	if stdout.Elided() > 0 {
		return "", fmt.Errorf("git %s: more than %d bytes of output", args[0], userGitMaxOutput)
	}
	return strings.TrimSuffix(stdout.String(), "\n"), nil
}

// maxListedPaths bounds the paths a message names.
const maxListedPaths = 10

// listPaths joins paths with ", ", naming at most maxListedPaths.
func listPaths(paths []string) string {
	if len(paths) <= maxListedPaths {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:maxListedPaths], ", "), len(paths)-maxListedPaths)
}

// firstLines returns the first n lines of s joined with "; ".
func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "; ")
}

// linkAtHead describes the tree at HEAD for workspace.PatchSymlinks: the
// target of the symbolic link at path, if there is one.
func (r *userRepo) linkAtHead(ctx context.Context) func(path string) (string, bool) {
	return func(path string) (string, bool) {
		entry, err := r.git(ctx, nil, "ls-tree", "--full-tree", r.head, "--", path)
		if err != nil || !strings.HasPrefix(entry, "120000 blob ") {
			return "", false
		}
		meta, _, _ := strings.Cut(entry, "\t")
		f := strings.Fields(meta)
		target, err := r.git(ctx, nil, "cat-file", "blob", f[2])
		return target, err == nil
	}
}
