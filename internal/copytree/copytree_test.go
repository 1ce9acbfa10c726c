package copytree

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// TestRemoveReadOnlyTree: a tree with read-only directories, as Go's
// module cache leaves them, is removed by its owner, an unprivileged user
// (the test runs a copy of itself as uid 65534 for that, which only root
// can do), where os.RemoveAll alone fails with "permission denied".
func TestRemoveReadOnlyTree(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root, to run the removal as another, unprivileged, user")
	}
	const nobody = 65534
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		how     string
		removed bool
	}{{"RemoveAll", false}, {"Remove", true}} {
		base := t.TempDir()
		bin := filepath.Join(base, "copytree.test")
		if err := os.WriteFile(bin, self, 0o755); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(base, "home")
		mod := filepath.Join(dir, "go", "pkg", "mod", "example.com", "m@v1.0.0")
		if err := os.MkdirAll(filepath.Join(mod, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, "sub", "m.go"), []byte("package m\n"), 0o444); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{filepath.Dir(base), base} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(base, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil {
				err = os.Lchown(p, nobody, nobody)
			}
			return err
		})
		for _, p := range []string{filepath.Join(mod, "sub"), mod} {
			if err := os.Chmod(p, 0o555); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.CommandContext(t.Context(), bin, "-test.run=^TestRemoveHelper$", "-test.v")
		cmd.Env = []string{"COPYTREE_REMOVE=" + tt.how, "COPYTREE_DIR=" + dir}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, _ := cmd.CombinedOutput()
		_, statErr := os.Stat(dir)
		removed := errors.Is(statErr, fs.ErrNotExist)
		want := "--- FAIL: TestRemoveHelper"
		if tt.removed {
			want = "--- PASS: TestRemoveHelper"
		}
		if removed != tt.removed || !strings.Contains(string(out), want) {
			t.Errorf("%s as uid %d: removed %v, want %v:\n%s", tt.how, nobody, removed, tt.removed, out)
		}
		if !removed {
			if err := Remove(dir); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRemoveHelper is TestRemoveReadOnlyTree's removal, run as another
// user.
func TestRemoveHelper(t *testing.T) {
	dir := os.Getenv("COPYTREE_DIR")
	if dir == "" {
		t.Skip("run by TestRemoveReadOnlyTree")
	}
	remove := Remove
	if os.Getenv("COPYTREE_REMOVE") == "RemoveAll" {
		remove = os.RemoveAll
	}
	if err := remove(dir); err != nil {
		t.Fatal(err)
	}
}
