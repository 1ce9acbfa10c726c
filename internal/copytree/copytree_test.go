package copytree

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestCopyAndInto(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(filepath.Join(src, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a", "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a/f", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dst := filepath.Join(dir, "dst")
	if err := Copy(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	into := filepath.Join(dir, "into")
	if err := os.Mkdir(into, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Into(ctx, src, into); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dst, into} {
		fi, err := os.Stat(filepath.Join(d, "a", "f"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s/a/f: %v %v, want a copy with mode 0600", d, fi, err)
		}
		if target, err := os.Readlink(filepath.Join(d, "link")); err != nil || target != "a/f" {
			t.Errorf("%s/link = %q, %v; want the link kept", d, target, err)
		}
	}
	if err := Copy(ctx, filepath.Join(dir, "missing"), filepath.Join(dir, "empty")); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "empty")); err != nil || len(entries) != 0 {
		t.Errorf("copy of a missing tree: %v %v, want an empty directory", entries, err)
	}
	if err := Into(ctx, filepath.Join(dir, "missing"), into); err == nil {
		t.Error("Into from a missing tree: no error")
	}
}
