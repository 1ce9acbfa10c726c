package workspace

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestCacheDiff(t *testing.T) {
	g := newGitServer(t)
	c := newTestCache(t, &bytes.Buffer{})
	ctx := context.Background()
	if _, err := c.Diff(ctx, cacheRepo, strings.Repeat("a", 40), strings.Repeat("b", 40), 100); err == nil {
		t.Errorf("Diff before any fetch succeeded, want an error")
	}
	// The branch leaves main, then main moves on: the diff shows only the
	// branch's change, as the pull request would.
	g.f.Commit(cacheRepo, "feature", map[string]string{"src/main.go": "package main\n\nfunc main() {}\n", ".gitattributes": "* diff=evil\n"}, "feature")
	g.f.Commit(cacheRepo, "main", map[string]string{"README.md": "# widget, later\n"}, "main moves on")
	f, err := c.Fetch(ctx, cacheRepo, g.remote(t))
	if err != nil {
		t.Fatal(err)
	}
	base, head := f.Branches["main"], f.Branches["feature"]
	d, err := c.Diff(ctx, cacheRepo, base, head, 1<<20)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	for _, want := range []string{"diff --git a/src/main.go b/src/main.go", "+func main() {}", "+* diff=evil"} {
		if !strings.Contains(d.Patch, want) {
			t.Errorf("patch lacks %q:\n%s", want, d.Patch)
		}
	}
	if strings.Contains(d.Patch, "README.md") || d.Truncated || d.MergeBase == base || d.MergeBase == "" {
		t.Errorf("diff = %+v, want only the branch's change from the merge base", d)
	}

	cut, err := c.Diff(ctx, cacheRepo, base, head, 60)
	if err != nil {
		t.Fatalf("Diff with a small limit: %v", err)
	}
	if !cut.Truncated || len(cut.Patch) > 60 || !strings.HasSuffix(cut.Patch, "\n") || !strings.HasPrefix(d.Patch, cut.Patch) {
		t.Errorf("cut diff = %+v, want at most 60 bytes of whole lines", cut)
	}

	for _, bad := range []struct{ base, head string }{{"main", head}, {base, "HEAD~1"}, {"--output=/tmp/x", head}} {
		if _, err := c.Diff(ctx, cacheRepo, bad.base, bad.head, 100); err == nil {
			t.Errorf("Diff(%q, %q) succeeded, want an error", bad.base, bad.head)
		}
	}
}
