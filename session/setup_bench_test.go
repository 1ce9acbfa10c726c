package session

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/llm"
	"github.com/agentfix/agentfix/setupcache"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// benchMain is the program the benchmark's Go module imports: with what they
// need, 58 modules, this project's own dependencies at its own versions.
const benchMain = `package main

import (
	"fmt"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/go-chi/chi/v5"
	"github.com/go-git/go-git/v5"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-github/v66/github"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

func main() {
	c := anthropic.NewClient()
	fmt.Println(chi.NewRouter() != nil, git.ErrRepositoryNotExists, name.DefaultRegistry, github.String("x"),
		asynq.QueueInfo{}, redis.Nil, prometheus.NewRegistry() != nil, &c != nil)
}
`

// BenchmarkSetupCache is issue 12's warm setup: a job's setup of a Go
// module with 58 module dependencies (`go build ./...`, which downloads
// them from a GOPROXY directory on the machine, mounted read-only in the
// sandbox, and compiles them), cold (no saved caches: the first job of the
// repository) and warm (the caches the first job saved are copied into
// the job's HOME first). Each iteration is one whole run through Run to
// the agent's first step, in a new working copy; the copy of the
// repository is not timed. The GOPROXY directory is made from this
// machine's module cache (the modules this project builds with).
func BenchmarkSetupCache(b *testing.B) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go on PATH")
	}
	module := b.TempDir()
	goMod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		b.Fatal(err)
	}
	// The project's own requirements, so every version is one the
	// machine's module cache holds.
	requires := string(goMod[strings.Index(string(goMod), "\ngo "):])
	files := map[string]string{"go.mod": "module example.com/widget\n" + requires, "main.go": benchMain}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(module, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	hostCache, err := exec.Command(goBin, "env", "GOMODCACHE").Output()
	if err != nil {
		b.Fatal(err)
	}
	modCache := b.TempDir()
	env := append(os.Environ(), "GOMODCACHE="+modCache, "GOFLAGS=-mod=mod -modcacherw", "GOSUMDB=off", "GOTOOLCHAIN=local",
		"GOPROXY=file://"+filepath.Join(strings.TrimSpace(string(hostCache)), "cache", "download"))
	for _, args := range [][]string{{"mod", "tidy", "-e"}, {"mod", "download"}} {
		cmd := exec.Command(goBin, args...)
		cmd.Dir, cmd.Env = module, env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Skipf("the machine's module cache cannot serve the module (go %s: %v):\n%s", strings.Join(args, " "), err, out)
		}
	}
	files = map[string]string{}
	for _, name := range []string{"go.mod", "go.sum", "main.go"} {
		content, err := os.ReadFile(filepath.Join(module, name))
		if err != nil {
			b.Fatal(err)
		}
		files[name] = string(content)
	}
	b.Logf("module requirements: %d lines of go.sum", strings.Count(files["go.sum"], "\n"))
	repo := newRepo(b, files)
	proxy := filepath.Join(modCache, "cache", "download")
	sandbox := func(o workspace.Options) (tools.Sandbox, error) {
		o.ReadOnlyDirs = append(o.ReadOnlyDirs, proxy)
		o.Env = map[string]string{"GOPROXY": "file://" + proxy, "GOSUMDB": "off", "GOTOOLCHAIN": "local"}
		return workspace.NewBwrap(o)
	}
	ctx := context.Background()
	// run is one job to the agent's first step; it returns how long that
	// took and whether it found warm caches.
	run := func(b *testing.B, cache *setupcache.Cache) (time.Duration, bool) {
		wt, remove := untimedWorkTree(b, repo)
		defer remove()
		var took time.Duration
		start := time.Now()
		res, err := Run(ctx, Options{
			WorkTree: wt, Sandbox: sandbox, SetupCache: cache, Model: llm.NewScripted("submit", false, call("1", "submit", map[string]string{"summary": "x"}), call("2", "submit", map[string]string{})),
			Settings: Settings{Setup: []string{"go build ./..."}, SetupTimeout: time.Hour, SaveSetupCache: true, Limits: agent.Config{MaxSteps: 10}},
			Task:     agent.Task{Repo: "octo/widget", Title: "a warm setup"},
			Hooks:    Hooks{OnAgentStart: func(context.Context) { took = time.Since(start) }},
		})
		if err != nil {
			b.Fatal(err)
		}
		return took, res.Environment.WarmCaches
	}
	newCache := func(b *testing.B) *setupcache.Cache {
		c, err := setupcache.New(setupcache.Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	b.Run("cold", func(b *testing.B) {
		var total time.Duration
		for range b.N {
			took, warm := run(b, newCache(b))
			if warm {
				b.Fatal("a new cache was warm")
			}
			total += took
		}
		b.ReportMetric(total.Seconds()/float64(b.N), "to-agent-s/op")
	})
	b.Run("warm", func(b *testing.B) {
		cache := newCache(b)
		run(b, cache) // the first job, which saves the caches
		b.ResetTimer()
		var total time.Duration
		for range b.N {
			took, warm := run(b, cache)
			if !warm {
				b.Fatal("the second job found no warm caches")
			}
			total += took
		}
		b.ReportMetric(total.Seconds()/float64(b.N), "to-agent-s/op")
	})
}

// untimedWorkTree makes a new working copy of repo for one timed run, with
// the benchmark's timer stopped; the timer runs again when it returns, and
// stops while remove removes the copy.
func untimedWorkTree(b *testing.B, repo string) (wt *workspace.WorkTree, remove func()) {
	b.StopTimer()
	defer b.StartTimer()
	wt, err := workspace.NewWorkTreeFromRepo(context.Background(), repo, workspace.WorkTreeOptions{Dir: filepath.Join(b.TempDir(), "job")})
	if err != nil {
		b.Fatal(err)
	}
	return wt, func() {
		b.StopTimer()
		defer b.StartTimer()
		if err := wt.Remove(); err != nil {
			b.Error(err)
		}
	}
}
