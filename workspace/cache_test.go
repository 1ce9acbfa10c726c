package workspace

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/ghapp/ghfake"
)

const (
	cacheRepo      = "Octo/Widget"
	cacheInstallID = 7
)

// gitServer is the fake GitHub's git HTTP server with one repository and a
// way to get installation tokens for it.
type gitServer struct {
	f   *ghfake.Fake
	app *ghapp.App
	url string
}

func newGitServer(t *testing.T) *gitServer {
	t.Helper()
	f := ghfake.New(t)
	url := f.NewRepo(cacheRepo, map[string]string{"README.md": "# widget\n", "src/main.go": "package main\n"})
	f.Install(cacheInstallID, cacheRepo)
	app, err := ghapp.New(ghapp.Options{AppID: f.AppID(), PrivateKey: f.PrivateKeyPEM(), APIURL: f.APIURL()})
	if err != nil {
		t.Fatal(err)
	}
	return &gitServer{f: f, app: app, url: url}
}

// remote returns the clone URL with a current token scoped to the repository.
func (g *gitServer) remote(t *testing.T) Remote {
	t.Helper()
	tok, err := g.app.Token(context.Background(), cacheInstallID, ghapp.Repo{Owner: "Octo", Name: "Widget"})
	if err != nil {
		t.Fatal(err)
	}
	return Remote{URL: g.url, Token: tok.Value}
}

// newTestCache returns a cache whose log records go to logs.
func newTestCache(t *testing.T, logs *bytes.Buffer) *Cache {
	t.Helper()
	c, err := NewCache(CacheOptions{Dir: filepath.Join(t.TempDir(), "repos"),
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// scanForSecret fails when secret appears in any file under dir.
func scanForSecret(t *testing.T, dir, secret string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		n++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("the token appears in %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no file under %s to scan", dir)
	}
}

func TestCacheFetch(t *testing.T) {
	g := newGitServer(t)
	var logs bytes.Buffer
	c := newTestCache(t, &logs)
	ctx := context.Background()
	r := g.remote(t)

	first, err := c.Fetch(ctx, cacheRepo, r)
	if err != nil {
		t.Fatalf("cold Fetch: %v", err)
	}
	main, _ := g.f.Branch(cacheRepo, "main")
	if diff := cmp.Diff(map[string]string{"main": main}, first.Branches); diff != "" {
		t.Errorf("branches after the cold fetch (-want +got):\n%s", diff)
	}
	if want := filepath.Join(c.Dir(), "octo", "widget.git"); first.Dir != want {
		t.Errorf("cache dir = %s, want %s (lower-case owner/name)", first.Dir, want)
	}

	again, err := c.Fetch(ctx, cacheRepo, r)
	if err != nil || !again.UpToDate {
		t.Errorf("second Fetch = up to date %v, %v; want up to date", again.UpToDate, err)
	}

	// A new branch, a moved default branch and a force-pushed branch all
	// arrive; a deleted branch goes.
	topic := g.f.Commit(cacheRepo, "agent-fix/issue-1", map[string]string{"a.txt": "1\n"}, "topic")
	main2 := g.f.Commit(cacheRepo, "main", map[string]string{"b.txt": "2\n"}, "main moves")
	gone := g.f.Commit(cacheRepo, "gone", map[string]string{"c.txt": "3\n"}, "to delete")
	second, err := c.Fetch(ctx, cacheRepo, r)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"main": main2, "agent-fix/issue-1": topic, "gone": gone}
	if diff := cmp.Diff(want, second.Branches); diff != "" || second.UpToDate {
		t.Errorf("after new commits: up to date %v, branches (-want +got):\n%s", second.UpToDate, diff)
	}
	gitT(t, g.f.GitDir(cacheRepo), "update-ref", "-d", "refs/heads/gone")
	gitT(t, g.f.GitDir(cacheRepo), "update-ref", "refs/heads/agent-fix/issue-1", main) // force-pushed back
	// What a fetch killed mid-pack leaves behind goes at the next fetch.
	leftover := filepath.Join(first.Dir, "objects", "pack", "tmp_pack_Ab12Cd")
	writeFiles(t, filepath.Dir(leftover), map[string]string{filepath.Base(leftover): "PACK partial"})
	third, err := c.Fetch(ctx, cacheRepo, r)
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"main": main2, "agent-fix/issue-1": main}
	if diff := cmp.Diff(want, third.Branches); diff != "" {
		t.Errorf("branches after force push and delete (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary pack of an interrupted fetch still there after a fetch (err %v)", err)
	}
	// Every object the branches need arrived (the later packs are thin,
	// completed by git index-pack with objects of the cache).
	gitT(t, first.Dir, "--git-dir="+first.Dir, "fsck", "--connectivity-only", "--no-dangling", "--no-progress")

	scanForSecret(t, c.Dir(), r.Token)
	if strings.Contains(logs.String(), r.Token) {
		t.Errorf("the token appears in the logs")
	}
}

func TestCacheFetchErrors(t *testing.T) {
	g := newGitServer(t)
	empty := g.f.NewRepo("octo/empty", nil)
	g.f.Install(cacheInstallID, "octo/empty")
	c := newTestCache(t, &bytes.Buffer{})
	good := g.remote(t)
	emptyTok, err := g.app.Token(context.Background(), cacheInstallID, ghapp.Repo{Owner: "octo", Name: "empty"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		repo   string
		remote Remote
		want   string
	}{
		{"bad token", cacheRepo, Remote{URL: g.url, Token: "ghs_not-a-token"}, "authentication required"},
		{"no token", cacheRepo, Remote{URL: g.url}, "authentication required"},
		{"credentials in url", cacheRepo, Remote{URL: strings.Replace(g.url, "http://", "http://x-access-token:"+good.Token+"@", 1), Token: good.Token}, "credentials in the URL are refused"},
		{"ssh url", cacheRepo, Remote{URL: "ssh://git@github.com/octo/widget.git", Token: good.Token}, "scheme must be http or https"},
		{"bad repo name", "octo/../etc", Remote{URL: g.url, Token: good.Token}, "want owner/name"},
		{"empty repository", "octo/empty", Remote{URL: empty, Token: emptyTok.Value}, "the repository is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Fetch(context.Background(), tt.repo, tt.remote)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Fetch error = %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), good.Token) {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
}

func TestRemoteRedactsToken(t *testing.T) {
	r := Remote{URL: "https://example.com/o/r.git", Token: "ghs_secret"}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("remote", "remote", r)
	for name, s := range map[string]string{"String": r.String(), "GoString": r.GoString(), "log": logs.String()} {
		if strings.Contains(s, "ghs_secret") {
			t.Errorf("%s shows the token: %s", name, s)
		}
	}
}

func TestCacheCheckout(t *testing.T) {
	g := newGitServer(t)
	c := newTestCache(t, &bytes.Buffer{})
	ctx := context.Background()
	if _, err := c.Checkout(ctx, cacheRepo, strings.Repeat("a", 40), WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job")}); err == nil {
		t.Errorf("Checkout before any fetch succeeded, want an error")
	}
	f, err := c.Fetch(ctx, cacheRepo, g.remote(t))
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Checkout(ctx, cacheRepo, f.Branches["main"], WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job")})
	if err != nil {
		t.Fatalf("Checkout: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(w.Dir(), "src", "main.go"))
	if err != nil || string(got) != "package main\n" {
		t.Errorf("src/main.go = %q, %v; want the repository's file", got, err)
	}
	if w.Base() != f.Branches["main"] {
		t.Errorf("Base = %s, want %s", w.Base(), f.Branches["main"])
	}
	checkSelfContained(t, w.GitDir())
	checkSelfContained(t, filepath.Join(w.Dir(), ".git"))
}

// commitChange makes a working copy of main, changes a file and commits.
func commitChange(t *testing.T, c *Cache, base, content string) (*WorkTree, string) {
	t.Helper()
	ctx := context.Background()
	w, err := c.Checkout(ctx, cacheRepo, base, WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job")})
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, w.Dir(), map[string]string{"README.md": content})
	commit, err := w.Commit(ctx, CommitOptions{Message: "Fix #1", Author: Identity{Name: "bot", Email: "bot@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	return w, commit
}

func TestCachePush(t *testing.T) {
	g := newGitServer(t)
	var logs bytes.Buffer
	c := newTestCache(t, &logs)
	ctx := context.Background()
	r := g.remote(t)
	f, err := c.Fetch(ctx, cacheRepo, r)
	if err != nil {
		t.Fatal(err)
	}
	const branch = "agent-fix/issue-1"
	w, commit := commitChange(t, c, f.Branches["main"], "# fixed\n")

	if err := c.Push(ctx, cacheRepo, w, PushOptions{Remote: g.remote(t), Branch: branch, Commit: commit}); err != nil {
		t.Fatalf("Push: %v", err)
	}
	if got, _ := g.f.Branch(cacheRepo, branch); got != commit {
		t.Errorf("remote %s = %s, want %s", branch, got, commit)
	}
	if got, _ := g.f.Branch(cacheRepo, "main"); got != f.Branches["main"] {
		t.Errorf("main moved to %s; a push must touch only its branch", got)
	}
	if err := c.Push(ctx, cacheRepo, w, PushOptions{Remote: g.remote(t), Branch: branch, Commit: commit}); err != nil {
		t.Errorf("repeated Push = %v, want nil (already up to date)", err)
	}

	// Another commit of the same base is not a fast-forward: refused unless
	// forced.
	other, otherCommit := commitChange(t, c, f.Branches["main"], "# other fix\n")
	err = c.Push(ctx, cacheRepo, other, PushOptions{Remote: g.remote(t), Branch: branch, Commit: otherCommit})
	if !errors.Is(err, ErrNonFastForward) {
		t.Errorf("non-fast-forward Push = %v, want ErrNonFastForward", err)
	}
	if got, _ := g.f.Branch(cacheRepo, branch); got != commit {
		t.Errorf("refused push moved %s to %s", branch, got)
	}
	if err := c.Push(ctx, cacheRepo, other, PushOptions{Remote: g.remote(t), Branch: branch, Commit: otherCommit, Force: true}); err != nil {
		t.Fatalf("forced Push: %v", err)
	}
	if got, _ := g.f.Branch(cacheRepo, branch); got != otherCommit {
		t.Errorf("after the forced push %s = %s, want %s", branch, got, otherCommit)
	}

	// A revise job: fetch the branch, commit on top, push without force.
	f, err = c.Fetch(ctx, cacheRepo, r)
	if err != nil {
		t.Fatal(err)
	}
	next, nextCommit := commitChange(t, c, f.Branches[branch], "# revised\n")
	if err := c.Push(ctx, cacheRepo, next, PushOptions{Remote: g.remote(t), Branch: branch, Commit: nextCommit}); err != nil {
		t.Fatalf("fast-forward Push: %v", err)
	}
	if got := g.f.HeadCommit(cacheRepo, branch); got.SHA != nextCommit || len(got.Parents) != 1 || got.Parents[0] != otherCommit {
		t.Errorf("%s head = %+v, want %s on top of %s", branch, got, nextCommit, otherCommit)
	}

	for _, bad := range []PushOptions{
		{Remote: r, Branch: "HEAD:refs/heads/x", Commit: nextCommit},
		{Remote: r, Branch: "-x", Commit: nextCommit},
		{Remote: r, Branch: branch, Commit: "HEAD"},
	} {
		if err := c.Push(ctx, cacheRepo, next, bad); err == nil {
			t.Errorf("Push(%+v) succeeded, want an error", bad)
		}
	}
	for _, dir := range []string{c.Dir(), filepath.Dir(w.GitDir()), filepath.Dir(next.GitDir())} {
		scanForSecret(t, dir, r.Token)
	}
	if strings.Contains(logs.String(), r.Token) {
		t.Errorf("the token appears in the logs")
	}
}

func TestCachePushExpiredToken(t *testing.T) {
	g := newGitServer(t)
	c := newTestCache(t, &bytes.Buffer{})
	ctx := context.Background()
	r := g.remote(t)
	f, err := c.Fetch(ctx, cacheRepo, r)
	if err != nil {
		t.Fatal(err)
	}
	w, commit := commitChange(t, c, f.Branches["main"], "# fixed\n")
	g.f.ExpireTokens()
	err = c.Push(ctx, cacheRepo, w, PushOptions{Remote: r, Branch: "agent-fix/issue-1", Commit: commit})
	if err == nil {
		t.Fatalf("Push with an expired token succeeded")
	}
	if strings.Contains(err.Error(), r.Token) {
		t.Errorf("the error shows the token: %v", err)
	}
}

func TestLockWaitsAndHonoursContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	ctx := context.Background()
	held, err := lockFile(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		shared bool
	}{{"exclusive", false}, {"shared", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			if l, err := lockFile(cctx, path, tt.shared); err == nil {
				l.Unlock()
				t.Fatalf("took the lock while another holder had it exclusively")
			} else if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error = %v, want the context's deadline", err)
			}
		})
	}
	got := make(chan error, 1)
	go func() {
		l, err := lockFile(ctx, path, false)
		if err == nil {
			err = l.Unlock()
		}
		got <- err
	}()
	if err := held.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Errorf("waiter after unlock: %v", err)
	}

	// Two shared holders at once.
	a, err := lockFile(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := lockFile(ctx, path, true)
	if err != nil {
		t.Fatalf("second shared lock: %v", err)
	}
	a.Unlock()
	b.Unlock()
}

// TestLockAcrossProcesses holds the lock with flock(1) in another process.
func TestLockAcrossProcesses(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Fatalf("flock(1) from util-linux is needed: %v", err)
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd := exec.Command("flock", "--exclusive", path, "cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	// Wait until the other process holds it: a non-blocking probe fails.
	for i := 0; exec.Command("flock", "--nonblock", path, "true").Run() == nil; i++ {
		if i > 1000 {
			t.Fatalf("flock(1) did not take the lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := lockFile(ctx, path, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lock held by another process: error %v, want the context's deadline", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	l, err := lockFile(context.Background(), path, false)
	if err != nil {
		t.Fatalf("lock after the other process ended: %v", err)
	}
	l.Unlock()
}

func TestConcurrentFetchesAndCheckouts(t *testing.T) {
	g := newGitServer(t)
	c := newTestCache(t, &bytes.Buffer{})
	ctx := context.Background()
	r := g.remote(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := c.Fetch(ctx, cacheRepo, r)
			if err != nil {
				errs <- err
				return
			}
			_, err = c.Checkout(ctx, cacheRepo, f.Branches["main"], WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job", string(rune('a'+i)))})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent fetch and checkout: %v", err)
		}
	}
}

func TestCacheRepacksManyPacks(t *testing.T) {
	g := newGitServer(t)
	c, err := NewCache(CacheOptions{Dir: filepath.Join(t.TempDir(), "repos"), MaxPacks: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := g.remote(t)
	var f Fetched
	for i := range 5 {
		g.f.Commit(cacheRepo, "main", map[string]string{"n.txt": strings.Repeat("x", i+1)}, "commit")
		if f, err = c.Fetch(ctx, cacheRepo, r); err != nil {
			t.Fatal(err)
		}
		packs, _ := filepath.Glob(filepath.Join(f.Dir, "objects", "pack", "*.pack"))
		if len(packs) > 2 {
			t.Errorf("after fetch %d the cache has %d packs, want at most MaxPacks = 2", i+1, len(packs))
		}
	}
	want, _ := g.f.Branch(cacheRepo, "main")
	w, err := c.Checkout(ctx, cacheRepo, f.Branches["main"], WorkTreeOptions{Dir: filepath.Join(t.TempDir(), "job")})
	if err != nil || f.Branches["main"] != want {
		t.Fatalf("checkout after repacks: %v (main %s, want %s)", err, f.Branches["main"], want)
	}
	if got, _ := os.ReadFile(filepath.Join(w.Dir(), "n.txt")); string(got) != "xxxxx" {
		t.Errorf("n.txt = %q, want the last commit's", got)
	}
}
