package workspace

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/ghapp/ghfake"
)

// The repository cache benchmark (DESIGN.md §11): a generated repository of
// about 20,000 files served by the fake GitHub's git HTTP server (git
// http-backend behind net/http/cgi, token auth), fetched cold into an empty
// cache and made into a job's working copy, against `git clone --depth 1`
// of the same server (and `git clone --bare`, the same transfer as the
// cache's fetch by git's own client); then a repeat job on the warm cache,
// and the floors of any working copy (cp -r, git checkout). The Throttled
// variant puts a 50 Mbit/s, 20 ms link (link_bench_test.go) between every
// client and the server. Every directory is under TMPDIR: TMPDIR=/dev/shm
// takes the disk out. The peak memory of the process during a cold fetch is
// measured in a child process (this test binary run again, see TestMain),
// whose VmHWM covers the fetch alone, with the peak of the git processes it
// ran next to it.
//
//	go test -run '^$' -bench RepositoryCache -benchtime 1x ./workspace/
//
// Each benchmark runs AGENTFIX_BENCH_ROUNDS (default 5) rounds whatever b.N
// is, so -benchtime 1x runs them once. Shape of the generated repository,
// from environment variables: AGENTFIX_BENCH_FILES (default 20000) files in
// directories of 20, about 2.5 KB each on average, and
// AGENTFIX_BENCH_COMMITS (default 20) commits, each after the first
// changing 2% of the files.

const (
	benchRepo    = "bench/big"
	benchInstall = 9
	// rssChildEnv, when set, makes the test binary a child that fetches the
	// repository named by the other variables and prints its VmHWM.
	rssChildEnv = "AGENTFIX_BENCH_RSS_CHILD"
	rssURLEnv   = "AGENTFIX_BENCH_RSS_URL"
	rssTokenEnv = "AGENTFIX_BENCH_RSS_TOKEN"
)

func TestMain(m *testing.M) {
	if os.Getenv(rssChildEnv) != "" {
		os.Exit(rssChild())
	}
	os.Exit(m.Run())
}

// rssChild fetches into a fresh cache (or, with mode "baseline", does
// nothing) and prints "VmHWM <kB> children <kB>": its own peak resident set
// and the largest peak of the processes it ran.
func rssChild() int {
	if os.Getenv(rssChildEnv) == "fetch" {
		dir, err := os.MkdirTemp("", "rss-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		c, err := NewCache(CacheOptions{Dir: filepath.Join(dir, "repos")})
		if err == nil {
			_, err = c.Fetch(context.Background(), benchRepo, Remote{URL: os.Getenv(rssURLEnv), Token: os.Getenv(rssTokenEnv)})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	kb, err := vmHWM()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The largest peak of the git processes the fetch ran (index-pack).
	var children syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("VmHWM", kb, "children", children.Maxrss)
	return 0
}

// vmHWM reads the process's peak resident set size in kB.
func vmHWM() (int, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchServer is the fake GitHub serving the generated repository.
type benchServer struct {
	f     *ghfake.Fake
	app   *ghapp.App
	url   string
	files int
}

// newBenchServer generates the repository with git fast-import (quick even
// for many files) and pushes it to the fake's bare repository.
func newBenchServer(b *testing.B) *benchServer {
	b.Helper()
	files, commits := envInt("AGENTFIX_BENCH_FILES", 20000), envInt("AGENTFIX_BENCH_COMMITS", 20)
	f := ghfake.New(b)
	url := f.NewRepo(benchRepo, nil)
	f.Install(benchInstall, benchRepo)
	bare := f.GitDir(benchRepo)
	var stream strings.Builder
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("func return if else for range var const type struct interface package import error nil string int map slice append len make go defer select case switch break continue")
	content := func() string {
		var s strings.Builder
		n := 200 + rng.IntN(4800) // 200 B to 5 KB, 2.5 KB on average
		for s.Len() < n {
			s.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(8) == 0 {
				s.WriteString("\n\t")
			} else {
				s.WriteByte(' ')
			}
			fmt.Fprintf(&s, "x%d ", rng.IntN(100000))
		}
		return s.String()
	}
	path := func(i int) string { return fmt.Sprintf("pkg%03d/sub%02d/file%05d.go", i/400, i/20%20, i) }
	for c := 0; c < commits; c++ {
		fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter Bench <bench@example.com> %d +0000\ndata 9\ncommit %02d\n", 1700000000+c, c)
		for i := 0; i < files; i++ {
			if c > 0 && rng.IntN(50) != 0 {
				continue
			}
			data := content()
			fmt.Fprintf(&stream, "M 100644 inline %s\ndata %d\n%s\n", path(i), len(data), data)
		}
		stream.WriteString("\n")
	}
	cmd := exec.Command("git", "--git-dir="+bare, "fast-import", "--quiet")
	cmd.Stdin = strings.NewReader(stream.String())
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v\n%s", err, out)
	}
	if out, err := exec.Command("git", "--git-dir="+bare, "repack", "-a", "-d", "-q").CombinedOutput(); err != nil {
		b.Fatalf("repack: %v\n%s", err, out)
	}
	app, err := ghapp.New(ghapp.Options{AppID: f.AppID(), PrivateKey: f.PrivateKeyPEM(), APIURL: f.APIURL()})
	if err != nil {
		b.Fatal(err)
	}
	return &benchServer{f: f, app: app, url: url, files: files}
}

func (s *benchServer) token(b *testing.B) string {
	b.Helper()
	tok, err := s.app.Token(context.Background(), benchInstall, ghapp.Repo{Owner: "bench", Name: "big"})
	if err != nil {
		b.Fatal(err)
	}
	return tok.Value
}

// gitClone runs the git CLI's clone of the same server with args, the
// token in an http.extraHeader: the references.
func gitClone(b *testing.B, url, token, dir string, args ...string) time.Duration {
	b.Helper()
	cred := base64.StdEncoding.EncodeToString([]byte(tokenUser + ":" + token))
	full := append([]string{"-c", "http.extraHeader=Authorization: Basic " + cred, "-c", "protocol.version=2", "clone", "--quiet"}, args...)
	cmd := exec.Command("git", append(full, url, dir)...)
	home := b.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0"}
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git clone %v: %v\n%s", args, err, out)
	}
	return time.Since(start)
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func BenchmarkRepositoryCache(b *testing.B) {
	s := newBenchServer(b)
	s.rounds(b, s.url)
}

// BenchmarkRepositoryCacheThrottled is BenchmarkRepositoryCache with the
// git server behind a link of 50 Mbit/s each way and a 20 ms round trip
// (see link): the clones and the cache's fetches all go through it, so a
// transfer costs what its size and round trips cost on such a network.
func BenchmarkRepositoryCacheThrottled(b *testing.B) {
	s := newBenchServer(b)
	s.rounds(b, throttle(b, s.url, link{bandwidth: 50e6 / 8, delay: 10 * time.Millisecond}))
}

// rounds times AGENTFIX_BENCH_ROUNDS (default 5) rounds of: the reference
// clones, a cold fetch and working copy, a repeat job on the warm cache,
// and the floors of a working copy (see BENCHMARKS.md), against the git
// server at url, and reports their medians.
func (s *benchServer) rounds(b *testing.B, url string) {
	ctx := context.Background()
	names := []string{"clone-depth1", "clone-bare", "cold-fetch", "cold-ready", "warm-fetch", "warm-ready", "floor-cp", "floor-checkout", "floor-checkout-1"}
	times := map[string][]time.Duration{}
	rounds := envInt("AGENTFIX_BENCH_ROUNDS", 5)
	b.ResetTimer()
	for i := 0; i < rounds; i++ {
		tok := s.token(b)
		times["clone-depth1"] = append(times["clone-depth1"], gitClone(b, url, tok, filepath.Join(b.TempDir(), "clone"), "--depth", "1"))
		// The same transfer as the cache's fetch (every branch, the whole
		// history, no checkout) by git's own client.
		times["clone-bare"] = append(times["clone-bare"], gitClone(b, url, tok, filepath.Join(b.TempDir(), "bare.git"), "--bare"))

		c, err := NewCache(CacheOptions{Dir: filepath.Join(b.TempDir(), "repos")})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		f, err := c.Fetch(ctx, benchRepo, Remote{URL: url, Token: tok})
		if err != nil {
			b.Fatal(err)
		}
		times["cold-fetch"] = append(times["cold-fetch"], time.Since(start))
		w, err := c.Checkout(ctx, benchRepo, f.Branches["main"], WorkTreeOptions{Dir: filepath.Join(b.TempDir(), "job")})
		if err != nil {
			b.Fatal(err)
		}
		times["cold-ready"] = append(times["cold-ready"], time.Since(start))
		if i == 0 {
			if n := countFiles(b, w.Dir()); n != s.files {
				b.Fatalf("working copy has %d files, want %d", n, s.files)
			}
		}
		s.floors(b, w, times)
		w.Remove()

		// A repeat job for the repository: fetch (nothing new) and a new
		// working copy.
		start = time.Now()
		f, err = c.Fetch(ctx, benchRepo, Remote{URL: url, Token: tok})
		if err != nil {
			b.Fatal(err)
		}
		times["warm-fetch"] = append(times["warm-fetch"], time.Since(start))
		w, err = c.Checkout(ctx, benchRepo, f.Branches["main"], WorkTreeOptions{Dir: filepath.Join(b.TempDir(), "job")})
		if err != nil {
			b.Fatal(err)
		}
		times["warm-ready"] = append(times["warm-ready"], time.Since(start))
		w.Remove()
	}
	b.StopTimer()
	for _, name := range names {
		b.ReportMetric(float64(median(times[name]).Milliseconds()), name+"-ms")
	}
	med := func(name string) float64 { return float64(median(times[name])) }
	b.ReportMetric(med("cold-ready")/med("clone-depth1"), "cold/clone")
	b.ReportMetric(med("warm-ready")/med("cold-ready"), "warm/cold")
	b.ReportMetric(med("floor-checkout")/med("cold-ready"), "floor/cold")
	b.Logf("%d rounds, checkout.workers=%d", rounds, checkoutWorkers())
	for _, name := range names {
		b.Logf("%-16s %v", name, times[name])
	}
}

// floors times what no self-contained working copy of the repository can
// beat once its objects are local: `cp -r` of the checked-out files (no
// .git) into an empty directory, and git's checkout of the base commit
// from the private git dir into an empty directory, with the working
// copy's number of parallel checkout workers and with one.
func (s *benchServer) floors(b *testing.B, w *WorkTree, times map[string][]time.Duration) {
	ctx := context.Background()
	tree := filepath.Join(b.TempDir(), "tree")
	if out, err := exec.Command("cp", "-r", w.Dir(), tree).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v\n%s", err, out)
	}
	if err := os.RemoveAll(filepath.Join(tree, ".git")); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if out, err := exec.Command("cp", "-r", tree, filepath.Join(b.TempDir(), "copy")).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v\n%s", err, out)
	}
	times["floor-cp"] = append(times["floor-cp"], time.Since(start))
	for name, workers := range map[string]int{"floor-checkout": checkoutWorkers(), "floor-checkout-1": 1} {
		g := gitRunner{gitDir: w.GitDir(), workTree: b.TempDir(), home: b.TempDir(), timeout: time.Minute}
		index := []string{"GIT_INDEX_FILE=" + filepath.Join(b.TempDir(), "index")}
		start := time.Now()
		if _, err := g.run(ctx, nil, 1<<10, index, "-c", "checkout.workers="+strconv.Itoa(workers), "reset", "--quiet", "--hard", w.Base()); err != nil {
			b.Fatal(err)
		}
		times[name] = append(times[name], time.Since(start))
	}
}

func BenchmarkRepositoryCacheRSS(b *testing.B) {
	s := newBenchServer(b)
	measure := func(mode string) (self, children int) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), rssChildEnv+"="+mode, rssURLEnv+"="+s.url, rssTokenEnv+"="+s.token(b))
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("child %s: %v\n%s", mode, err, out)
		}
		if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "VmHWM %d children %d", &self, &children); err != nil {
			b.Fatalf("child %s printed %q", mode, out)
		}
		return self, children
	}
	b.ResetTimer()
	var peak, git, base int
	for range envInt("AGENTFIX_BENCH_ROUNDS", 5) {
		self, children := measure("fetch")
		peak, git = max(peak, self), max(git, children)
		self, _ = measure("baseline")
		base = max(base, self)
	}
	b.ReportMetric(float64(peak)/1024, "peak-rss-MB")
	b.ReportMetric(float64(git)/1024, "git-peak-rss-MB")
	b.ReportMetric(float64(base)/1024, "baseline-rss-MB")
}

func countFiles(b *testing.B, dir string) int {
	b.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
