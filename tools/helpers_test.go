package tools

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/workspace"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// golden compares got with testdata/name.golden, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", file, diff)
	}
}

// fixedGitEnv makes the test repositories' commit ids deterministic.
var fixedGitEnv = []string{
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
	"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z",
	"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z",
}

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), fixedGitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
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

// repoFiles is the base commit of the test repository.
var repoFiles = map[string]string{
	"calc/calc.go":             "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
	"calc/calc_test.go":        "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"Add(1, 2) != 3\")\n\t}\n}\n",
	"go.mod":                   "module example.com/calc\n\ngo 1.22\n",
	"README.md":                "# calc\n",
	".github/workflows/ci.yml": "on: push\n",
	"run_tests.sh":             "#!/bin/sh\necho 'ok   calc   0.01s'\ngrep -q 'a + b' calc/calc.go || { echo 'FAIL: Add(1, 2) = -1, want 3'; exit 1; }\n",
}

// testEnv is an Env over a real working copy and the real bwrap sandbox.
type testEnv struct {
	*Env
	wt *workspace.WorkTree
	sb *workspace.Bwrap
}

func newTestEnv(t *testing.T, configure func(*Options)) testEnv {
	t.Helper()
	return newTestEnvTree(t, workspace.WorkTreeOptions{}, configure)
}

// newTestEnvTree is newTestEnv with options for the work tree.
func newTestEnvTree(t *testing.T, wo workspace.WorkTreeOptions, configure func(*Options)) testEnv {
	t.Helper()
	src := t.TempDir()
	gitT(t, src, "init", "--quiet", "--initial-branch=main")
	writeFiles(t, src, repoFiles)
	gitT(t, src, "add", "--all")
	gitT(t, src, "commit", "--quiet", "-m", "base")
	wo.Dir = filepath.Join(t.TempDir(), "job")
	wt, err := workspace.NewWorkTreeFromRepo(context.Background(), src, wo)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := workspace.NewBwrap(workspace.Options{Workspace: wt.Dir(), Cache: wt.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Sandbox: sb, Repo: wt, Root: wt.Dir()}
	if configure != nil {
		configure(&o)
	}
	env, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return testEnv{Env: env, wt: wt, sb: sb}
}

// call builds a tool call with JSON arguments.
func call(name string, args any) agent.ToolCall {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return agent.ToolCall{ID: "call_1", Name: name, Arguments: raw}
}

// exec runs one call and fails the test on an error.
func (e testEnv) exec(t *testing.T, c agent.ToolCall) agent.Observation {
	t.Helper()
	obs, err := e.Execute(context.Background(), c)
	if err != nil {
		t.Fatalf("Execute(%s %s): %v", c.Name, c.Arguments, err)
	}
	return obs
}

func (e testEnv) bash(t *testing.T, command string) string {
	t.Helper()
	return e.exec(t, call(BashTool, map[string]string{"command": command})).Output
}
