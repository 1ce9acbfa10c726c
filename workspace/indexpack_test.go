package workspace

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// packOf returns the pack `git pack-objects --revs` makes in repo from
// revs (one a line; ^rev excludes), thin when asked.
func packOf(t *testing.T, repo, revs string, thin bool) []byte {
	t.Helper()
	args := []string{"pack-objects", "--stdout", "--revs", "-q"}
	if thin {
		args = append(args, "--thin")
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = repo
	cmd.Stdin = strings.NewReader(revs + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pack-objects: %v", err)
	}
	return out
}

func TestIndexPack(t *testing.T) {
	src, first := newSourceRepo(t)
	writeFiles(t, src, map[string]string{"main.go": "package main\n\nfunc main() {\n\tprintln(\"hi there\")\n}\n"})
	gitT(t, src, "commit", "--quiet", "-am", "second")
	second := gitT(t, src, "rev-parse", "HEAD")
	full := packOf(t, src, second, false)
	thin := packOf(t, src, second+"\n^"+first, true)

	for _, tc := range []struct {
		name string
		// has is a commit the repository holds before; "" for none.
		has     string
		pack    []byte
		wantErr string
	}{
		{name: "whole pack", pack: full},
		{name: "thin pack completed from the repository", has: first, pack: thin},
		{name: "thin pack without its bases", pack: thin, wantErr: "index-pack"},
		{name: "not a pack", pack: []byte("PACK but not really a pack, long enough to be read"), wantErr: "index-pack"},
		{name: "truncated pack", pack: full[:len(full)/2], wantErr: "index-pack"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bare := filepath.Join(t.TempDir(), "repo.git")
			gitT(t, src, "init", "--quiet", "--bare", bare)
			if tc.has != "" {
				gitT(t, bare, "fetch", "--quiet", src, tc.has+":refs/heads/main")
			}
			g := gitRunner{gitDir: bare, home: t.TempDir(), timeout: time.Minute}
			done := 0
			w, err := g.startIndexPack(context.Background(), func() { done++ })
			if err != nil {
				t.Fatal(err)
			}
			_, werr := w.Write(tc.pack)
			err = w.Close()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("Close() = %v (Write: %v), want an error naming %q", err, werr, tc.wantErr)
				}
				if done != 0 {
					t.Errorf("done ran %d times after a failed index-pack, want 0", done)
				}
				return
			}
			if werr != nil || err != nil {
				t.Fatalf("Write: %v, Close: %v", werr, err)
			}
			if done != 1 {
				t.Errorf("done ran %d times, want 1", done)
			}
			gitT(t, bare, "--git-dir="+bare, "fsck", "--connectivity-only", "--no-dangling", "--no-progress", second)
		})
	}
}
