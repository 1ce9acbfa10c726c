// Package copytree copies directory trees the way `cp -a` does — modes,
// links and times kept, file data reflinked where the file system can —
// for the caches a job starts from: copies, never shared writable.
package copytree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentfix/agentfix/internal/proc"
)

// Copy copies src to dst, which must not exist. A missing src makes an
// empty dst.
func Copy(ctx context.Context, src, dst string) error {
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return os.MkdirAll(dst, 0o755)
	}
	return cp(ctx, src, dst)
}

// Into copies what directory src holds into the existing directory dst,
// over what is there.
func Into(ctx context.Context, src, dst string) error {
	return cp(ctx, src+"/.", dst)
}

func cp(ctx context.Context, src, dst string) error {
	cmd := proc.Command(ctx, nil, "cp", "-a", "--reflink=auto", "--", src, dst)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cp -a %s %s: %w: %s", src, dst, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Remove removes the tree at dir as os.RemoveAll does, after making each
// of its directories writable by their owner: what a job's setup leaves
// may hold read-only directories (Go's module cache makes every module's
// directory 0555), which os.RemoveAll cannot empty unless it runs as
// root. A missing dir is no error.
func Remove(dir string) error {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			if info, err := d.Info(); err == nil && info.Mode().Perm()&0o700 != 0o700 {
				_ = os.Chmod(path, info.Mode().Perm()|0o700)
			}
		}
		return nil
	})
	return os.RemoveAll(dir)
}
