package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// mergeRepo makes a bare repository whose branch pr and main both moved on
// from baseFiles: pr changed main.go and README.md, main changed main.go
// (the same line), deleted old.txt and added new.txt. It returns the bare
// repository and the heads of pr and main.
func mergeRepo(t *testing.T) (bare, pr, main string) {
	t.Helper()
	src, _ := newSourceRepo(t)
	gitT(t, src, "checkout", "--quiet", "-b", "pr")
	writeFiles(t, src, map[string]string{"main.go": strings.Replace(baseFiles["main.go"], `"hi"`, `"hello"`, 1), "README.md": "# demo, fixed\n"})
	gitT(t, src, "commit", "--quiet", "-am", "pr")
	pr = gitT(t, src, "rev-parse", "HEAD")
	gitT(t, src, "checkout", "--quiet", "main")
	writeFiles(t, src, map[string]string{"main.go": strings.Replace(baseFiles["main.go"], `"hi"`, `"howdy"`, 1), "new.txt": "new\n"})
	gitT(t, src, "rm", "--quiet", "old.txt")
	gitT(t, src, "add", "--all")
	gitT(t, src, "commit", "--quiet", "-m", "main")
	main = gitT(t, src, "rev-parse", "HEAD")
	bare = filepath.Join(t.TempDir(), "bare.git")
	gitT(t, t.TempDir(), "clone", "--quiet", "--bare", src, bare)
	return bare, pr, main
}

// TestWorkTreeMerge: a merge leaves the merged files in the working copy,
// the conflicting one with diff3 markers and both sides' changes named;
// the commit after it has both parents, and the working copy's diff is the
// merge's change to the pull request's side.
func TestWorkTreeMerge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bare, pr, main := mergeRepo(t)
	w, err := NewWorkTreeFromBare(ctx, bare, pr, WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job"), Branch: "pr"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.Merge(ctx, main, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Conflicts) != 1 || res.Conflicts[0].Path != "main.go" {
		t.Fatalf("conflicts = %+v, want main.go alone", res.Conflicts)
	}
	c := res.Conflicts[0]
	if !strings.Contains(c.Ours, `+	println("hello")`) || !strings.Contains(c.Theirs, `+	println("howdy")`) {
		t.Errorf("sides of main.go:\nours:\n%s\ntheirs:\n%s\nwant each side's change", c.Ours, c.Theirs)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(w.Dir(), name))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	wantMain := "package main\n\nfunc main() {\n<<<<<<< HEAD\n\tprintln(\"hello\")\n||||||| " + res.MergeBase[:7]
	if got := read("main.go"); !strings.HasPrefix(got, wantMain) || !strings.Contains(got, "=======\n\tprintln(\"howdy\")\n>>>>>>> "+main) {
		t.Errorf("main.go after the merge:\n%s\nwant diff3 markers", got)
	}
	if read("new.txt") != "new\n" || read("README.md") != "# demo, fixed\n" || !strings.HasPrefix(read("old.txt"), "<") {
		t.Errorf("new.txt %q, README.md %q, old.txt %q; want main's new file, the pull request's README, old.txt gone",
			read("new.txt"), read("README.md"), read("old.txt"))
	}

	// Setup on another tree puts the merge back, markers and all.
	err = w.WithTree(ctx, main, func() error {
		if got := read("main.go"); got != strings.Replace(baseFiles["main.go"], `"hi"`, `"howdy"`, 1) {
			t.Errorf("main.go during WithTree(main) = %q, want main's", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := read("main.go"); !strings.HasPrefix(got, wantMain) || read("README.md") != "# demo, fixed\n" {
		t.Errorf("main.go after WithTree:\n%s\nwant the merge back", got)
	}

	// The agent resolves the conflict; the commit is the merge.
	writeFiles(t, w.Dir(), map[string]string{"main.go": strings.Replace(baseFiles["main.go"], `"hi"`, `"hello, howdy"`, 1)})
	commit, err := w.Commit(ctx, CommitOptions{Message: "Merge main", Author: Identity{Name: "bot", Email: "bot@example.com"}, Time: time.Unix(1700000000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	g := gitRunner{gitDir: w.GitDir(), home: w.git.home, timeout: time.Minute}
	parents, err := g.text(ctx, "rev-list", "--parents", "-n", "1", commit)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.Join([]string{commit, pr, main}, " "), parents); diff != "" {
		t.Errorf("the merge commit's parents (-want +got):\n%s", diff)
	}
	// The next commit is an ordinary one.
	writeFiles(t, w.Dir(), map[string]string{"README.md": "# demo, fixed again\n"})
	next, err := w.Commit(ctx, CommitOptions{Message: "More", Author: Identity{Name: "bot", Email: "bot@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if parents, _ := g.text(ctx, "rev-list", "--parents", "-n", "1", next); parents != next+" "+commit {
		t.Errorf("parents of the commit after the merge = %q, want %s alone", parents, commit)
	}
}

// TestWorkTreeMergeClean: a merge without conflicts names none, and a
// merge that changes no file is still committed; RecordMerge makes a merge
// of a working copy that holds one already.
func TestWorkTreeMergeClean(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bare, pr, main := mergeRepo(t)
	w, err := NewWorkTreeFromBare(ctx, bare, main, WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job")})
	if err != nil {
		t.Fatal(err)
	}
	// Merging an ancestor of the working copy's commit changes nothing.
	res, err := w.Merge(ctx, main+"~1", 1000)
	if err != nil || len(res.Conflicts) != 0 {
		t.Fatalf("merge of an ancestor = %+v, %v; want no conflicts", res, err)
	}
	author := Identity{Name: "bot", Email: "bot@example.com"}
	if _, err := w.Commit(ctx, CommitOptions{Message: "Merge", Author: author}); err != nil {
		t.Errorf("commit of a merge that changes nothing: %v, want a commit", err)
	}
	if _, err := w.Commit(ctx, CommitOptions{Message: "Again", Author: author}); err != ErrNoChanges {
		t.Errorf("commit after it: %v, want ErrNoChanges", err)
	}

	r, err := NewWorkTreeFromBare(ctx, bare, pr, WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job")})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RecordMerge(ctx, "0000000000000000000000000000000000000000"); err == nil {
		t.Error("RecordMerge of an unknown commit: no error")
	}
	if err := r.RecordMerge(ctx, main); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, r.Dir(), map[string]string{"main.go": "package main\n"})
	commit, err := r.Commit(ctx, CommitOptions{Message: "Merge main", Author: author})
	if err != nil {
		t.Fatal(err)
	}
	g := gitRunner{gitDir: r.GitDir(), home: r.git.home, timeout: time.Minute}
	if parents, _ := g.text(ctx, "rev-list", "--parents", "-n", "1", commit); parents != commit+" "+pr+" "+main {
		t.Errorf("parents = %q, want %s %s", parents, pr, main)
	}
}
