package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// baseLinks are the symbolic links of the base commit of the symlink
// tests, besides baseFiles.
var baseLinks = map[string]string{
	"here":     ".",
	"safe":     "README.md",
	"a/b/deep": "../../README.md",
}

// newSymlinkRepo makes a source repository with baseFiles and baseLinks
// and a workflow-shaped directory the links may point at.
func newSymlinkRepo(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	gitT(t, src, "init", "--quiet", "--initial-branch=main")
	writeFiles(t, src, baseFiles)
	writeFiles(t, src, map[string]string{"ci/gh/workflows/evil.yml": "on: push\njobs: {}\n"})
	for p, target := range baseLinks {
		os.MkdirAll(filepath.Join(src, filepath.Dir(p)), 0o755)
		if err := os.Symlink(target, filepath.Join(src, p)); err != nil {
			t.Fatal(err)
		}
	}
	gitT(t, src, "add", "--all")
	gitT(t, src, "commit", "--quiet", "-m", "base")
	return src
}

// baseLookup answers PatchSymlinks' questions from the base commit of src.
func baseLookup(t *testing.T, src string) func(string) (string, bool) {
	return func(p string) (string, bool) {
		out, err := exec.Command("git", "-C", src, "ls-tree", "HEAD", "--", p).Output()
		if err != nil || !strings.HasPrefix(string(out), symlinkMode+" ") {
			return "", false
		}
		target, err := exec.Command("git", "-C", src, "cat-file", "blob", "HEAD:"+p).Output()
		if err != nil {
			t.Errorf("read the base's link %s: %v", p, err)
			return "", false
		}
		return string(target), true
	}
}

func TestChangesSymlinks(t *testing.T) {
	src := newSymlinkRepo(t)
	link := func(t *testing.T, w *WorkTree, p, target string) {
		t.Helper()
		full := filepath.Join(w.Dir(), p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.Remove(full)
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name          string
		edit          func(t *testing.T, w *WorkTree)
		want          []Symlink
		wantWorkflows []string
	}{
		{"github dir as a symlink", func(t *testing.T, w *WorkTree) {
			os.RemoveAll(filepath.Join(w.Dir(), ".github"))
			link(t, w, ".github", "ci/gh")
		}, []Symlink{{Path: ".github", Target: "ci/gh", UnderGitHub: true}}, []string{".github", ".github/workflows/ci.yml"}},
		{"workflows dir as a symlink", func(t *testing.T, w *WorkTree) {
			os.RemoveAll(filepath.Join(w.Dir(), ".github", "workflows"))
			link(t, w, ".github/workflows", "../ci/gh/workflows")
		}, []Symlink{{Path: ".github/workflows", Target: "../ci/gh/workflows", UnderGitHub: true}}, []string{".github/workflows", ".github/workflows/ci.yml"}},
		{"other link under github", func(t *testing.T, w *WorkTree) {
			link(t, w, ".github/CODEOWNERS", "../docs/guide/intro.md")
		}, []Symlink{{Path: ".github/CODEOWNERS", Target: "../docs/guide/intro.md", UnderGitHub: true}}, []string{".github/CODEOWNERS"}},
		{"absolute target", func(t *testing.T, w *WorkTree) {
			link(t, w, "passwd", "/etc/passwd")
		}, []Symlink{{Path: "passwd", Target: "/etc/passwd", Escapes: true}}, nil},
		{"relative target above the root", func(t *testing.T, w *WorkTree) {
			link(t, w, "docs/key", "../../.ssh/id_ed25519")
		}, []Symlink{{Path: "docs/key", Target: "../../.ssh/id_ed25519", Escapes: true}}, nil},
		{"escape through a link of the base", func(t *testing.T, w *WorkTree) {
			link(t, w, "docs/esc", "../here/..")
		}, []Symlink{{Path: "docs/esc", Target: "../here/..", Escapes: true}}, nil},
		{"existing link modified to escape", func(t *testing.T, w *WorkTree) {
			link(t, w, "safe", "/root/.netrc")
		}, []Symlink{{Path: "safe", Target: "/root/.netrc", Escapes: true}}, nil},
		{"file turned into an escaping link", func(t *testing.T, w *WorkTree) {
			link(t, w, "README.md", "/etc/shadow")
		}, []Symlink{{Path: "README.md", Target: "/etc/shadow", Escapes: true}}, nil},
		{"link moved to where its target escapes", func(t *testing.T, w *WorkTree) {
			os.Rename(filepath.Join(w.Dir(), "a/b/deep"), filepath.Join(w.Dir(), "deep"))
		}, []Symlink{{Path: "deep", Target: "../../README.md", Escapes: true}}, nil},
		{"links inside the repository", func(t *testing.T, w *WorkTree) {
			link(t, w, "docs/readme", "../README.md")
			link(t, w, "docs/guide/up", "../../here/docs")
			os.Remove(filepath.Join(w.Dir(), "here"))
		}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			w, err := NewWorkTreeFromRepo(ctx, src, WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job")})
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(t, w)
			c, err := w.Changes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, c.Symlinks); diff != "" {
				t.Errorf("Changes.Symlinks (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWorkflows, c.Workflows); diff != "" {
				t.Errorf("Changes.Workflows (-want +got):\n%s", diff)
			}
			patch, err := w.Diff(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, err := PatchSymlinks(patch, baseLookup(t, src))
			if err != nil {
				t.Fatalf("PatchSymlinks: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PatchSymlinks (-want +got):\n%s\npatch:\n%s", diff, patch)
			}
		})
	}
}

func TestPatchSymlinksPaths(t *testing.T) {
	patch := "diff --git \"a/dir/tab\\there\" \"b/dir/tab\\there\"\n" +
		"new file mode 120000\nindex 0000000..1234567\n--- /dev/null\n+++ \"b/dir/tab\\there\"\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n" +
		"diff --git a/with space b/with space\nnew file mode 120000\nindex 0000000..1234567\n--- /dev/null\n+++ b/with space\n@@ -0,0 +1 @@\n+../..\n\\ No newline at end of file\n" +
		"diff --git a/plain.txt b/plain.txt\nnew file mode 100644\nindex 0000000..1234567\n--- /dev/null\n+++ b/plain.txt\n@@ -0,0 +1 @@\n+/etc/passwd\n"
	got, err := PatchSymlinks(patch, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Symlink{
		{Path: "dir/tab\there", Target: "/etc/passwd", Escapes: true},
		{Path: "with space", Target: "../..", Escapes: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PatchSymlinks (-want +got):\n%s", diff)
	}
}

func TestEscapes(t *testing.T) {
	links := map[string]string{"here": ".", "loop": "loop", "abs": "/etc", "d/up": ".."}
	lookup := func(p string) (string, bool) { s, ok := links[p]; return s, ok }
	tests := []struct {
		link, target string
		want         bool
	}{
		{"x", "README.md", false},
		{"x", "./a/../b", false},
		{"a/x", "../b", false},
		{"a/x", "../../b", true},
		{"x", "/etc/passwd", true},
		{"x", "here/..", true},
		{"x", "here/here/a", false},
		{"x", "abs/passwd", true},
		{"x", "loop/a", true},
		{"x", "d/up/d/up/..", true},
		{"x", "d/up/d", false},
		{"x", "", false},
	}
	for _, tt := range tests {
		if got := escapes(tt.link, tt.target, lookup); got != tt.want {
			t.Errorf("escapes(%s -> %s) = %v, want %v", tt.link, tt.target, got, tt.want)
		}
	}
}
