package session

import (
	"context"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/llm"
	"github.com/agentfix/agentfix/proof"
	"github.com/agentfix/agentfix/setupcache"
	"github.com/agentfix/agentfix/tools"
)

// mapBaselines is a BaselineCache in memory, as the worker's Redis one
// behaves within one process.
type mapBaselines struct {
	mu   sync.Mutex
	runs map[string]baselineEntry
}

type baselineEntry struct {
	t tools.TestResult
	r proof.Run
}

func (m *mapBaselines) Baseline(_ context.Context, key string) (*tools.TestResult, *proof.Run, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.runs[key]
	return &e.t, &e.r, ok
}

func (m *mapBaselines) SaveBaseline(_ context.Context, key string, t tools.TestResult, r proof.Run) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runs == nil {
		m.runs = map[string]baselineEntry{}
	}
	m.runs[key] = baselineEntry{t, r}
}

// BenchmarkProofCost is what issue 13's proof adds to a job: a whole run
// (setup from warm setup caches, the agent's fix, the two-phase submit)
// of a Go package with `go test ./...` as its test command, where the
// agent fixes the bug and adds a regression test in a new test file.
//   - no test command: no verdict at all, the job's floor;
//   - verdict only: the test command on the change, and a change without a
//     test file (so nothing to prove), with the baseline cached;
//   - proof, warm baseline: the same with the regression test, which the
//     harness proves by running the change's test files on the base code;
//   - proof, cold baseline: the same, with the base commit's run of the
//     test command made in the job (its first job on that base).
//
// The model is scripted, so a job here is seconds where a real one spends
// minutes waiting for its model: the shares are an upper bound.
func BenchmarkProofCost(b *testing.B) {
	if _, err := exec.LookPath("go"); err != nil {
		b.Skip("no go on PATH")
	}
	repo := newRepo(b, map[string]string{
		"go.mod":       "module example.com/calc\n\ngo 1.24\n",
		"calc.go":      "package calc\n\n// Add returns a + b.\nfunc Add(a, b int) int { return a - b }\n\n// Neg returns -a.\nfunc Neg(a int) int { return -a }\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestNeg(t *testing.T) {\n\tif Neg(2) != -2 {\n\t\tt.Fatal(Neg(2))\n\t}\n}\n",
	})
	fix := call("1", "str_replace_editor", map[string]string{"command": "str_replace", "path": "calc.go", "old_str": "a - b", "new_str": "a + b"})
	regression := call("2", "str_replace_editor", map[string]string{"command": "create", "path": "add_test.go",
		"file_text": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 2); got != 4 {\n\t\tt.Fatalf(\"Add(2, 2) = %d, want 4\", got)\n\t}\n}\n"})
	submit := func(id string) llm.Turn { return call(id, "submit", map[string]string{"summary": "Add adds."}) }
	ctx := context.Background()
	cache, err := setupcache.New(setupcache.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	settings := func(test string) Settings {
		return Settings{Setup: []string{"go test -count=1 ./... >/dev/null 2>&1 || true"}, SetupTimeout: time.Hour, SaveSetupCache: true,
			Test: test, TestTimeout: time.Hour, Limits: agent.Config{MaxSteps: 10}}
	}
	// run is one job; it returns its result.
	run := func(b *testing.B, s Settings, baselines BaselineCache, turns ...llm.Turn) Result {
		wt, remove := untimedWorkTree(b, repo)
		defer remove()
		res, err := Run(ctx, Options{WorkTree: wt, Sandbox: bwrap, ScratchDir: b.TempDir(), SetupCache: cache, Baselines: baselines,
			Model: llm.NewScripted("fix", false, turns...), Settings: s, Task: agent.Task{Repo: "octo/calc", Title: "Add subtracts"}})
		if err != nil {
			b.Fatal(err)
		}
		if res.Agent.Status != agent.Submitted {
			b.Fatalf("the run ended %s", res.Agent.Status)
		}
		return res
	}
	warm := &mapBaselines{}
	run(b, settings("go test ./..."), warm, fix, submit("3"), submit("4")) // fills the setup caches and the baseline
	b.Run("no test command", func(b *testing.B) {
		for range b.N {
			run(b, settings(""), nil, fix, submit("3"), submit("4"))
		}
	})
	b.Run("verdict only", func(b *testing.B) {
		for range b.N {
			if res := run(b, settings("go test ./..."), warm, fix, submit("3"), submit("4")); res.Review.Test == nil || res.Review.Verdict == nil || res.Review.Verdict.Proof != nil {
				b.Fatalf("review = %+v, want a verdict without a proof", res.Review)
			}
		}
	})
	b.Run("proof, warm baseline", func(b *testing.B) {
		for range b.N {
			if res := run(b, settings("go test ./..."), warm, fix, regression, submit("3"), submit("4")); !proven(res) {
				b.Fatalf("review = %+v, want a proof", res.Review)
			}
		}
	})
	b.Run("proof, cold baseline", func(b *testing.B) {
		for range b.N {
			if res := run(b, settings("go test ./..."), &mapBaselines{}, fix, regression, submit("3"), submit("4")); !proven(res) {
				b.Fatalf("review = %+v, want a proof", res.Review)
			}
		}
	})
}

// proven reports whether the run proved a regression test.
func proven(r Result) bool {
	return r.Review.Verdict != nil && r.Review.Verdict.Proof != nil && len(r.Review.Verdict.Proof.Proven) > 0
}
