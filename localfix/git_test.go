package localfix

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyRefusesSymlinks: --apply never writes a symbolic link whose
// target leaves the repository, or one under .github/, into the user's
// checkout, and says which; a patch without them applies.
func TestApplyRefusesSymlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "r")
	r, err := inspectRepo(context.Background(), dir, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	link := func(path, target string) string {
		return "diff --git a/" + path + " b/" + path + "\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/" + path +
			"\n@@ -0,0 +1 @@\n+" + target + "\n\\ No newline at end of file\n"
	}
	for _, tc := range []struct{ name, patch, want string }{
		{"absolute target", link("key", "/root/.ssh/id_ed25519"), "key -> /root/.ssh/id_ed25519 (its target is outside the repository)"},
		{"climbing out", link("up", "../../etc/passwd"), "up -> ../../etc/passwd (its target is outside the repository)"},
		{"under .github", link(".github/workflows/x.yml", "../../README.md"), "a symbolic link under .github/"},
	} {
		err := r.apply(context.Background(), tc.patch, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: apply = %v, want a refusal naming %q", tc.name, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 { // .git and README.md
		t.Errorf("the checkout changed: %v", entries)
	}
	if err := r.apply(context.Background(), link("docs", "README.md"), nil); err != nil {
		t.Errorf("a link inside the repository: %v", err)
	}
}
