package setupcache

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return string(b)
}

func TestSaveRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	c, err := New(Options{Dir: filepath.Join(dir, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home1")
	write(t, home, map[string]string{"go/pkg/mod/cache/x.zip": "module", ".cache/go-build/ab": "build"})
	key := Key("sha256:1", []string{"go mod download"}, map[string]string{"go.sum": "h1"})
	if err := c.Save(ctx, "octo/widget", key, home); err != nil {
		t.Fatal(err)
	}
	// The saved entry is a copy: later writes to the job's HOME do not reach it.
	write(t, home, map[string]string{"go/pkg/mod/cache/x.zip": "changed by the agent"})

	next := filepath.Join(dir, "home2")
	if err := os.Mkdir(next, 0o755); err != nil {
		t.Fatal(err)
	}
	ok, err := c.Restore(ctx, "octo/widget", key, next)
	if err != nil || !ok {
		t.Fatalf("Restore = %v, %v; want the saved caches", ok, err)
	}
	if got := read(t, filepath.Join(next, "go/pkg/mod/cache/x.zip")); got != "module" {
		t.Errorf("restored module = %q, want the one setup left", got)
	}
	// The restored copy is the job's own: writing it leaves the entry alone.
	write(t, next, map[string]string{".cache/go-build/ab": "mine"})
	third := filepath.Join(dir, "home3")
	os.Mkdir(third, 0o755)
	if ok, _ := c.Restore(ctx, "octo/widget", key, third); !ok || read(t, filepath.Join(third, ".cache/go-build/ab")) != "build" {
		t.Errorf("a job's writes reached the saved entry")
	}

	for _, miss := range []struct{ repo, key string }{
		{"octo/other", key}, // never across repositories
		{"octo/widget", Key("sha256:2", []string{"go mod download"}, map[string]string{"go.sum": "h1"})},
		{"octo/widget", Key("sha256:1", []string{"go mod download", "make"}, map[string]string{"go.sum": "h1"})},
		{"octo/widget", Key("sha256:1", []string{"go mod download"}, map[string]string{"go.sum": "h2"})},
	} {
		empty := t.TempDir()
		if ok, err := c.Restore(ctx, miss.repo, miss.key, empty); ok || err != nil {
			t.Errorf("Restore(%s, %s) = %v, %v; want nothing", miss.repo, miss.key, ok, err)
		}
	}
}

func TestEvict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	c, err := New(Options{Dir: filepath.Join(dir, "cache"), MaxBytes: 3 * 64 << 10, MaxAge: 48 * time.Hour, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	big := string(make([]byte, 60<<10))
	save := func(repo, key string) {
		home := t.TempDir()
		write(t, home, map[string]string{"f": big})
		if err := c.Save(ctx, repo, key, home); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Hour)
	}
	has := func(repo, key string) bool {
		ok, err := c.Restore(ctx, repo, key, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	save("a", "1")
	save("b", "1")
	save("a", "2")
	if !has("a", "1") { // used again: now the most recent
		t.Fatal("a/1 gone before the limit was passed")
	}
	save("c", "1") // past 3 entries' worth: the least recently used (b/1) goes
	got := map[string]bool{"a/1": has("a", "1"), "b/1": has("b", "1"), "a/2": has("a", "2"), "c/1": has("c", "1")}
	want := map[string]bool{"a/1": true, "b/1": false, "a/2": true, "c/1": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries after eviction by size (-want +got):\n%s", diff)
	}
	now = now.Add(50 * time.Hour) // a/2 (last restored at +4h) is now past two days unused
	save("d", "1")
	if has("a", "2") {
		t.Error("an entry unused for longer than MaxAge was kept")
	}
	if !has("d", "1") {
		t.Error("the entry just saved was evicted")
	}
}

func TestLockfiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"go.sum": "a", "web/package-lock.json": "b", "py/requirements-dev.txt": "c", "a/b/c/d/go.sum": "too deep",
		"node_modules/x/package-lock.json": "skipped", "main.go": "not a lockfile", "app/build.gradle.kts": "d",
	})
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "Cargo.lock")); err != nil {
		t.Fatal(err)
	}
	got, err := Lockfiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for p := range got {
		paths = append(paths, p)
	}
	want := []string{"app/build.gradle.kts", "go.sum", "py/requirements-dev.txt", "web/package-lock.json"}
	slices.Sort(paths)
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("lockfiles (-want +got):\n%s", diff)
	}
	write(t, dir, map[string]string{"go.sum": "changed"})
	again, _ := Lockfiles(dir)
	if again["go.sum"] == got["go.sum"] {
		t.Error("a changed lockfile kept its hash")
	}
}
