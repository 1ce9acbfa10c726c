package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestWithTree checks out the default branch's tree for setup in a round
// on the agent's branch, and puts the round's files back after it, keeping
// what setup made.
func TestWithTree(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	gitT(t, src, "init", "--quiet", "--initial-branch=main")
	writeFiles(t, src, map[string]string{"setup.sh": "echo trusted\n", ".gitignore": "node_modules/\n", "gone.txt": "only on main\n"})
	gitT(t, src, "add", "--all")
	gitT(t, src, "commit", "--quiet", "-m", "main")
	main := gitT(t, src, "rev-parse", "HEAD")
	gitT(t, src, "checkout", "--quiet", "-b", "agent-fix/issue-1")
	writeFiles(t, src, map[string]string{"setup.sh": "echo written by the agent\n", "agent.txt": "the round's\n"})
	gitT(t, src, "rm", "--quiet", "gone.txt")
	gitT(t, src, "add", "--all")
	gitT(t, src, "commit", "--quiet", "-m", "round 1")
	w, err := NewWorkTreeFromRepo(context.Background(), src, WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Remove()
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(w.Dir(), p))
		if err != nil {
			return "<missing>"
		}
		return string(b)
	}
	err = w.WithTree(context.Background(), main, func() error {
		if got := read("setup.sh"); got != "echo trusted\n" {
			t.Errorf("during setup, setup.sh = %q, want main's", got)
		}
		if got := read("agent.txt"); got != "<missing>" {
			t.Errorf("during setup, the round's agent.txt is there: %q", got)
		}
		if got := read("gone.txt"); got != "only on main\n" {
			t.Errorf("during setup, gone.txt = %q, want main's", got)
		}
		writeFiles(t, w.Dir(), map[string]string{"node_modules/dep.js": "installed\n", "setup.sh": "changed by setup\n"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"setup.sh": "echo written by the agent\n", "agent.txt": "the round's\n", "gone.txt": "<missing>", "node_modules/dep.js": "installed\n"} {
		if got := read(p); got != want {
			t.Errorf("after setup, %s = %q, want %q", p, got, want)
		}
	}
	if d, err := w.Diff(context.Background()); err != nil || d != "" {
		t.Errorf("diff after setup = %q, %v; want none", d, err)
	}

	boom := errors.New("setup failed")
	if err := w.WithTree(context.Background(), main, func() error { return boom }); !errors.Is(err, boom) || read("agent.txt") != "the round's\n" {
		t.Errorf("WithTree = %v, agent.txt %q; want setup's error and the round's files back", err, read("agent.txt"))
	}
	if err := w.WithTree(context.Background(), "main", func() error { return nil }); err == nil {
		t.Error("WithTree took a branch name for a commit id")
	}
}
