package workspace

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// gitT runs git for a test in dir (a repository the test owns) and returns
// its trimmed output.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// baseFiles is the content of the test repositories' base commit.
var baseFiles = map[string]string{
	"main.go":                   "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n",
	"main_test.go":              "package main\n",
	"README.md":                 "# demo\n",
	"old.txt":                   "to be deleted\n",
	"logo.bin":                  "\x00\x01\x02binary\xff",
	".gitignore":                "build/\n",
	".github/workflows/ci.yml":  "on: push\n",
	"docs/guide/intro.md":       "intro\n",
	"scripts/with space.sh":     "echo hi\n",
	"internal/util/util.go":     "package util\n",
	"internal/util/testdata/in": "data\n",
}

// newSourceRepo makes a repository with baseFiles committed and returns its
// path and HEAD.
func newSourceRepo(t *testing.T) (string, string) {
	t.Helper()
	src := t.TempDir()
	gitT(t, src, "init", "--quiet", "--initial-branch=main")
	writeFiles(t, src, baseFiles)
	gitT(t, src, "add", "--all")
	gitT(t, src, "commit", "--quiet", "-m", "base")
	return src, gitT(t, src, "rev-parse", "HEAD")
}

func newTestWorkTree(t *testing.T) (*WorkTree, string) {
	t.Helper()
	src, head := newSourceRepo(t)
	w, err := NewWorkTreeFromRepo(context.Background(), src, WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job")})
	if err != nil {
		t.Fatalf("NewWorkTreeFromRepo: %v", err)
	}
	return w, head
}

// checkSelfContained fails when gitDir borrows objects or shares inodes.
func checkSelfContained(t *testing.T, gitDir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(gitDir, "objects", "info", "alternates")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s has objects/info/alternates (err %v)", gitDir, err)
	}
	filepath.Walk(filepath.Join(gitDir, "objects"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if n := fi.Sys().(*syscall.Stat_t).Nlink; n != 1 {
				t.Errorf("%s has %d links, want 1 (no hardlinks)", p, n)
			}
		}
		return nil
	})
}

func TestNewWorkTreeFromRepo(t *testing.T) {
	src, head := newSourceRepo(t)
	// Uncommitted work in the user's checkout stays there.
	writeFiles(t, src, map[string]string{"README.md": "# dirty\n", "untracked.txt": "x\n"})
	w, err := NewWorkTreeFromRepo(context.Background(), src, WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job"), Branch: "agent-fix/issue-7"})
	if err != nil {
		t.Fatal(err)
	}
	if w.Base() != head {
		t.Errorf("Base() = %s, want %s", w.Base(), head)
	}
	got, err := os.ReadFile(filepath.Join(w.Dir(), "README.md"))
	if err != nil || string(got) != "# demo\n" {
		t.Errorf("README.md = %q, %v; want the committed content", got, err)
	}
	if _, err := os.Stat(filepath.Join(w.Dir(), "untracked.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("untracked file of the source was copied (err %v)", err)
	}
	// The working copy's own .git: the branch at base, a clean status, and
	// no trace of the private git dir.
	if got := gitT(t, w.Dir(), "rev-parse", "--abbrev-ref", "HEAD"); got != "agent-fix/issue-7" {
		t.Errorf("working copy branch %q, want agent-fix/issue-7", got)
	}
	if got := gitT(t, w.Dir(), "rev-parse", "HEAD"); got != head {
		t.Errorf("working copy HEAD %s, want %s", got, head)
	}
	if got := gitT(t, w.Dir(), "status", "--porcelain"); got != "" {
		t.Errorf("working copy status not clean:\n%s", got)
	}
	if got := gitT(t, w.Dir(), "remote"); got != "" {
		t.Errorf("working copy has remotes %q", got)
	}
	if strings.HasPrefix(w.GitDir(), w.Dir()) {
		t.Errorf("private git dir %s is inside the working copy %s", w.GitDir(), w.Dir())
	}
	checkSelfContained(t, w.GitDir())
	checkSelfContained(t, filepath.Join(w.Dir(), ".git"))
	if head, err := w.Head(context.Background()); err != nil || head != w.Base() {
		t.Errorf("Head() = %s, %v; want the base %s", head, err, w.Base())
	}
	if d, err := w.Diff(context.Background()); err != nil || d != "" {
		t.Errorf("Diff() of a fresh work tree = %q, %v; want empty", d, err)
	}
}

func TestNewWorkTreeFromBare(t *testing.T) {
	src, first := newSourceRepo(t)
	writeFiles(t, src, map[string]string{"README.md": "# second\n"})
	gitT(t, src, "commit", "--quiet", "-am", "second")
	bare := filepath.Join(t.TempDir(), "cache.git")
	gitT(t, src, "clone", "--quiet", "--bare", src, bare)

	w, err := NewWorkTreeFromBare(context.Background(), bare, first, WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job")})
	if err != nil {
		t.Fatal(err)
	}
	if w.Base() != first {
		t.Errorf("Base() = %s, want %s", w.Base(), first)
	}
	got, _ := os.ReadFile(filepath.Join(w.Dir(), "README.md"))
	if string(got) != "# demo\n" {
		t.Errorf("README.md = %q, want the first commit's content", got)
	}
	if got := gitT(t, w.Dir(), "rev-parse", "--abbrev-ref", "HEAD"); got != DefaultBranch {
		t.Errorf("branch %q, want %q", got, DefaultBranch)
	}
	checkSelfContained(t, w.GitDir())
	checkSelfContained(t, filepath.Join(w.Dir(), ".git"))

	for _, bad := range []string{"HEAD", "main", first[:12], strings.ToUpper(first)} {
		if _, err := NewWorkTreeFromBare(context.Background(), bare, bad, WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job")}); err == nil {
			t.Errorf("NewWorkTreeFromBare(%q): want an error for a non-full commit id", bad)
		}
	}
	missing := strings.Repeat("ab", 20)
	job := filepath.Join(t.TempDir(), "job")
	if _, err := NewWorkTreeFromBare(context.Background(), bare, missing, WorkTreeOptions{Dir: job}); err == nil {
		t.Errorf("NewWorkTreeFromBare with an unknown commit: want an error")
	}
	if _, err := os.Stat(job); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("job directory left behind after a failed checkout (err %v)", err)
	}
}

// TestNewWorkTreeFromBareCopiesObjects checks a working copy made from a
// bare repository holding a pack and loose objects: both git dirs get the
// whole history, complete (fsck), as files of their own.
func TestNewWorkTreeFromBareCopiesObjects(t *testing.T) {
	src, first := newSourceRepo(t)
	writeFiles(t, src, map[string]string{"README.md": "# second\n"})
	gitT(t, src, "commit", "--quiet", "-am", "second")
	bare := filepath.Join(t.TempDir(), "cache.git")
	gitT(t, src, "clone", "--quiet", "--bare", "--no-local", src, bare)
	// A push of a few objects leaves them loose in the bare repository.
	writeFiles(t, src, map[string]string{"README.md": "# third\n", "docs/new.md": "new\n"})
	gitT(t, src, "add", "--all")
	gitT(t, src, "commit", "--quiet", "-m", "third")
	gitT(t, src, "push", "--quiet", bare, "main")
	third := gitT(t, src, "rev-parse", "HEAD")
	loose, _ := filepath.Glob(filepath.Join(bare, "objects", "??", "*"))
	packs, _ := filepath.Glob(filepath.Join(bare, "objects", "pack", "*.pack"))
	if len(loose) == 0 || len(packs) == 0 {
		t.Fatalf("test setup: want loose objects and a pack in the bare repository, got %d and %d", len(loose), len(packs))
	}

	w, err := NewWorkTreeFromBare(context.Background(), bare, third, WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job"), Branch: "agent-fix/issue-3"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(w.Dir(), "docs", "new.md")); string(got) != "new\n" {
		t.Errorf("docs/new.md = %q, want the third commit's", got)
	}
	for name, dir := range map[string]string{"private git dir": w.GitDir(), "working copy .git": filepath.Join(w.Dir(), ".git")} {
		checkSelfContained(t, dir)
		gitT(t, dir, "--git-dir="+dir, "fsck", "--connectivity-only", "--no-dangling", "--no-progress")
		if got := gitT(t, dir, "--git-dir="+dir, "rev-list", "--count", third); got != "3" {
			t.Errorf("%s: rev-list --count = %s, want the whole history of 3 commits", name, got)
		}
	}
	if got := gitT(t, w.Dir(), "log", "--format=%s"); got != "third\nsecond\nbase" {
		t.Errorf("git log in the working copy:\n%s\nwant the three commits", got)
	}
	if got := gitT(t, w.Dir(), "status", "--porcelain"); got != "" {
		t.Errorf("working copy status not clean:\n%s", got)
	}
	if d, err := w.Diff(context.Background()); err != nil || d != "" {
		t.Errorf("Diff() of a fresh work tree = %q, %v; want empty", d, err)
	}
	if w.Base() != third {
		t.Errorf("Base() = %s, want %s", w.Base(), third)
	}

	// Objects borrowed through alternates would be missing from the copy.
	borrower := filepath.Join(t.TempDir(), "borrower.git")
	gitT(t, src, "clone", "--quiet", "--bare", "--shared", bare, borrower)
	job := filepath.Join(t.TempDir(), "job")
	if _, err := NewWorkTreeFromBare(context.Background(), borrower, first, WorkTreeOptions{Dir: job}); err == nil || !strings.Contains(err.Error(), "alternates") {
		t.Errorf("NewWorkTreeFromBare of a repository with alternates: err = %v, want a refusal naming alternates", err)
	}
	if _, err := os.Stat(job); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("job directory left behind after a refused checkout (err %v)", err)
	}
}

func TestNewWorkTreeFromLinkedWorktree(t *testing.T) {
	src, _ := newSourceRepo(t)
	linked := filepath.Join(t.TempDir(), "linked")
	gitT(t, src, "worktree", "add", "--quiet", "-b", "feature", linked)
	writeFiles(t, linked, map[string]string{"feature.txt": "feature\n"})
	gitT(t, linked, "add", "feature.txt")
	gitT(t, linked, "commit", "--quiet", "-m", "feature")
	w, err := NewWorkTreeFromRepo(context.Background(), linked, WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job")})
	if err != nil {
		t.Fatal(err)
	}
	if want := gitT(t, linked, "rev-parse", "HEAD"); w.Base() != want {
		t.Errorf("Base() = %s, want the linked worktree's HEAD %s", w.Base(), want)
	}
	if _, err := os.Stat(filepath.Join(w.Dir(), "feature.txt")); err != nil {
		t.Errorf("feature.txt missing from the copy: %v", err)
	}
}

func TestNewWorkTreeRefusesNonEmptyDir(t *testing.T) {
	src, _ := newSourceRepo(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"leftover": "x"})
	if _, err := NewWorkTreeFromRepo(context.Background(), src, WorkTreeOptions{Dir: dir}); err == nil {
		t.Errorf("NewWorkTreeFromRepo into a non-empty dir: want an error")
	}
}

// agentEdits changes the working copy the way an agent might, including
// committing in the working copy's own .git and ignoring a build output.
func agentEdits(t *testing.T, w *WorkTree) {
	t.Helper()
	writeFiles(t, w.Dir(), map[string]string{
		"main.go":                  "package main\n\nfunc main() {\n\tprintln(\"fixed\")\n}\n",
		"main_test.go":             "package main\n\n// changed test\n",
		"reproduce.py":             "print('bug')\n",
		"logo.bin":                 "\x00\x01\x02binary\xfe\xfe",
		".github/workflows/ci.yml": "on: [push, pull_request]\n",
		"build/output.o":           "ignored build output",
		"scripts/with space.sh":    "echo changed\n",
	})
	if err := os.Remove(filepath.Join(w.Dir(), "old.txt")); err != nil {
		t.Fatal(err)
	}
	gitT(t, w.Dir(), "add", "--all")
	gitT(t, w.Dir(), "commit", "--quiet", "-m", "agent commit that moves the working copy's HEAD")
}

func TestWorkTreeChanges(t *testing.T) {
	w, _ := newTestWorkTree(t)
	agentEdits(t, w)
	got, err := w.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := Changes{
		Files:     []string{".github/workflows/ci.yml", "logo.bin", "main.go", "main_test.go", "old.txt", "reproduce.py", "scripts/with space.sh"},
		New:       []string{"reproduce.py"},
		Deleted:   []string{"old.txt"},
		Tests:     []string{"main_test.go"},
		Workflows: []string{".github/workflows/ci.yml"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Changes (-want +got):\n%s", diff)
	}
}

func TestWorkTreeDiffApplies(t *testing.T) {
	w, head := newTestWorkTree(t)
	agentEdits(t, w)
	patch, err := w.Diff(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GIT binary patch", "diff --git a/reproduce.py b/reproduce.py", "deleted file mode", "diff --git a/scripts/with space.sh"} {
		if !strings.Contains(patch, want) {
			t.Errorf("diff lacks %q:\n%s", want, patch)
		}
	}
	if strings.Contains(patch, "build/output.o") {
		t.Errorf("diff contains the ignored build output:\n%s", patch)
	}

	// Applying the patch to a fresh checkout of the base reproduces the
	// working copy's tracked content exactly.
	check := t.TempDir()
	gitT(t, check, "init", "--quiet")
	gitT(t, check, "fetch", "--quiet", w.GitDir(), head)
	gitT(t, check, "checkout", "--quiet", head)
	cmd := exec.Command("git", "apply", "--index", "--binary", "-")
	cmd.Dir = check
	cmd.Stdin = strings.NewReader(patch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s", err, out)
	}
	gitT(t, check, "commit", "--quiet", "-m", "applied")
	wantTree := gitT(t, w.Dir(), "rev-parse", "HEAD^{tree}") // the agent committed everything
	if got := gitT(t, check, "rev-parse", "HEAD^{tree}"); got != wantTree {
		t.Errorf("tree after applying the diff %s, want %s", got, wantTree)
	}
}

func TestWorkTreeDiffLimit(t *testing.T) {
	src, _ := newSourceRepo(t)
	w, err := NewWorkTreeFromRepo(context.Background(), src, WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job"), MaxDiffBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, w.Dir(), map[string]string{"big.txt": strings.Repeat("line\n", 1000)})
	if _, err := w.Diff(context.Background()); !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("Diff over the limit: err = %v, want ErrOutputTooLarge", err)
	}
}

func TestWorkTreeCommit(t *testing.T) {
	w, base := newTestWorkTree(t)
	ctx := context.Background()
	bot := Identity{Name: "agentfix[bot]", Email: "123+agentfix[bot]@users.noreply.github.com"}
	opts := CommitOptions{
		Message:   "Fix #7: greet correctly",
		Author:    bot,
		CoAuthors: []Identity{{Name: "Octo Cat", Email: "octocat@example.com"}, {Name: "Octo Cat", Email: "OCTOCAT@example.com"}, bot},
		Time:      time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	if _, err := w.Commit(ctx, opts); !errors.Is(err, ErrNoChanges) {
		t.Errorf("Commit without changes: err = %v, want ErrNoChanges", err)
	}
	agentEdits(t, w)
	commit, err := w.Commit(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if head, _ := w.Head(ctx); head != commit {
		t.Errorf("Head() = %s, want the new commit %s", head, commit)
	}
	show := func(format string) string {
		return gitT(t, w.GitDir(), "--git-dir="+w.GitDir(), "log", "-1", "--format="+format, commit)
	}
	if got := show("%P"); got != base {
		t.Errorf("parent %s, want base %s", got, base)
	}
	wantMsg := "Fix #7: greet correctly\n\nCo-authored-by: Octo Cat <octocat@example.com>"
	if got := show("%B"); got != wantMsg {
		t.Errorf("message:\n%s\nwant:\n%s", got, wantMsg)
	}
	if got := show("%an <%ae> %ad|%cn <%ce>"); got != "agentfix[bot] <123+agentfix[bot]@users.noreply.github.com> Fri Jan 2 03:04:05 2026 +0000|agentfix[bot] <123+agentfix[bot]@users.noreply.github.com>" {
		t.Errorf("author/committer %q", got)
	}
	// The commit holds exactly the working copy.
	if got, want := show("%T"), gitT(t, w.Dir(), "rev-parse", "HEAD^{tree}"); got != want {
		t.Errorf("commit tree %s, want the working copy's %s", got, want)
	}
	if _, err := w.Commit(ctx, opts); !errors.Is(err, ErrNoChanges) {
		t.Errorf("second Commit without new changes: err = %v, want ErrNoChanges", err)
	}
	// The diff stays against the base.
	if d, _ := w.Diff(ctx); !strings.Contains(d, "reproduce.py") {
		t.Errorf("Diff after Commit lost the changes against base:\n%s", d)
	}

	for name, bad := range map[string]CommitOptions{
		"no message":          {Author: bot},
		"no author":           {Message: "m"},
		"newline in coauthor": {Message: "m", Author: bot, CoAuthors: []Identity{{Name: "a\nCo-authored-by: x", Email: "e@x"}}},
		"angle in email":      {Message: "m", Author: Identity{Name: "a", Email: "a>@b"}},
	} {
		if _, err := w.Commit(ctx, bad); err == nil {
			t.Errorf("Commit with %s: want an error", name)
		}
	}
}

func TestWorkTreeRemove(t *testing.T) {
	w, _ := newTestWorkTree(t)
	locked := filepath.Join(w.Dir(), "locked")
	writeFiles(t, locked, map[string]string{"f": "x"})
	os.Chmod(locked, 0)
	if err := w.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("working copy still exists after Remove (err %v)", err)
	}
}

// plantScript is run inside the sandbox: it arms every way git could run
// repository-controlled code. Each would create /workspace/marker-<name>.
const plantScript = `set -e
cat > .git/evil.sh <<'EOS'
#!/bin/sh
touch "$(dirname "$0")/../marker-$1"
cat
EOS
chmod +x .git/evil.sh
mkdir -p .git/evilhooks
for h in pre-commit prepare-commit-msg commit-msg post-commit post-checkout post-index-change reference-transaction pre-auto-gc post-rewrite fsmonitor-watchman; do
  printf '#!/bin/sh\ntouch "$(dirname "$0")/../../marker-%s"\n' "$h" > .git/hooks/$h
  printf '#!/bin/sh\ntouch "$(dirname "$0")/../../marker-hookspath-%s"\n' "$h" > .git/evilhooks/$h
  chmod +x .git/hooks/$h .git/evilhooks/$h
done
git config core.hooksPath .git/evilhooks
git config core.fsmonitor 'sh .git/evil.sh fsmonitor'
git config core.untrackedCache true
git config diff.external 'sh .git/evil.sh diff-external'
git config filter.evil.clean 'sh .git/evil.sh filter-clean'
git config filter.evil.smudge 'sh .git/evil.sh filter-smudge'
git config filter.evil.process 'sh .git/evil.sh filter-process'
git config diff.evil.textconv 'sh .git/evil.sh textconv'
git config diff.evil.command 'sh .git/evil.sh diff-driver'
printf '* filter=evil diff=evil\n' > .gitattributes
mkdir nested && cd nested && git init -q && git config core.fsmonitor 'sh ../.git/evil.sh nested-fsmonitor' && cd ..
echo changed >> README.md
echo new > new.txt
`

func markers(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "marker-*"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range m {
		names = append(names, filepath.Base(p))
	}
	return names
}

func TestWorkerGitRunsNothingFromTheRepository(t *testing.T) {
	w, _ := newTestWorkTree(t)
	sb := newTestBwrap(t, Options{Workspace: w.Dir(), Cache: w.CacheDir()})
	res := mustRun(t, sb, Command{Script: plantScript})
	if res.ExitCode != 0 {
		t.Fatalf("planting from inside the sandbox failed: exit %d\n%s", res.ExitCode, res.Output)
	}

	ctx := context.Background()
	patch, err := w.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(patch, "+changed") || !strings.Contains(patch, "b/new.txt") {
		t.Errorf("diff lacks the planted changes:\n%s", patch)
	}
	changes, err := w.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"nested"}, changes.NestedRepos); diff != "" {
		t.Errorf("NestedRepos (-want +got):\n%s", diff)
	}
	if _, err := w.Commit(ctx, CommitOptions{Message: "m", Author: Identity{Name: "bot", Email: "bot@example.com"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Diff(ctx); err != nil {
		t.Fatal(err)
	}
	if got := markers(t, w.Dir()); len(got) > 0 {
		t.Errorf("the worker's git ran repository-controlled code: %v", got)
	}

	// Control: the same operations with the working copy's own .git, as a
	// naive worker would run them, do run the planted code, so the check
	// above can fail.
	naive := exec.Command("sh", "-c", "git status >/dev/null; git diff >/dev/null; git add -A; git commit -q -m naive")
	naive.Dir = w.Dir()
	naive.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b")
	var out bytes.Buffer
	naive.Stdout, naive.Stderr = &out, &out
	naive.Run()
	got := markers(t, w.Dir())
	for _, want := range []string{"marker-fsmonitor", "marker-diff-driver", "marker-filter-process", "marker-hookspath-pre-commit", "marker-hookspath-post-index-change"} {
		if !strings.Contains(strings.Join(got, " "), want) {
			t.Errorf("control: naive git did not create %s (got %v); the planted traps are not armed\n%s", want, got, out.String())
		}
	}
}

func TestWorkTreeDiffWithoutWorkingGitDir(t *testing.T) {
	w, _ := newTestWorkTree(t)
	if err := os.RemoveAll(filepath.Join(w.Dir(), ".git")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, w.Dir(), map[string]string{".git": "gitdir: /elsewhere\n", "README.md": "# changed\n"})
	patch, err := w.Diff(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := "diff --git a/README.md b/README.md\n"
	if !strings.HasPrefix(patch, want) || strings.Contains(patch, "gitdir") {
		t.Errorf("diff with the working .git replaced by a file:\n%s\nwant only README.md", patch)
	}
}
