package proof

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tree writes files (path → contents) under dir.
func tree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// git runs git in dir and returns its output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// run runs a test command as the worker would, with bash in dir, and
// returns what Parse reads of it.
func run(t *testing.T, dir, command string, env ...string) Run {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "bash", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("run %q: %v", command, err)
		}
		code = ee.ExitCode()
	}
	return Parse(Input{Command: command, ExitCode: code, Output: out.String(), Dir: dir})
}

// change is a repository at a base commit and a change on top of it: the
// base commit's tree, the change's tree, and what the harness derives from
// them.
type change struct {
	base, head string // working copies
	diff       Change
	files      []string // the change's test files
	tests      []TestChange
}

// makeChange commits base in a new repository, applies edit (files to
// write) in a second working copy, and reads the change as the harness
// does: git diff, contents before and after, test files, changed tests.
func makeChange(t *testing.T, base, edit map[string]string) change {
	t.Helper()
	root := t.TempDir()
	c := change{base: filepath.Join(root, "base"), head: filepath.Join(root, "head")}
	tree(t, c.base, base)
	git(t, c.base, "init", "-q")
	git(t, c.base, "add", ".")
	git(t, c.base, "commit", "-qm", "base")
	git(t, root, "clone", "-q", c.base, c.head)
	tree(t, c.head, edit)
	git(t, c.head, "add", ".")
	c.diff = Change{Diff: git(t, c.head, "diff", "--cached"), Before: map[string][]byte{}, After: map[string][]byte{}}
	for p := range edit {
		if b, err := os.ReadFile(filepath.Join(c.base, p)); err == nil {
			c.diff.Before[p] = b
		}
		c.diff.After[p] = []byte(edit[p])
		if IsTestFile(p) {
			c.files = append(c.files, p)
		}
	}
	var err error
	if c.tests, err = ChangedTests(c.diff); err != nil {
		t.Fatal(err)
	}
	return c
}

// overlay returns a copy of the base commit's tree with the change's test
// files on it: where the change's tests run on the code without the fix.
func (c change) overlay(t *testing.T, files []string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "overlay")
	git(t, filepath.Dir(c.base), "clone", "-q", c.base, dir)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(c.head, f))
		if err != nil {
			t.Fatal(err)
		}
		tree(t, dir, map[string]string{f: string(b)})
	}
	return dir
}

var goEnv = []string{"GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local", "GOPROXY=off"}

// TestLiveGoTest runs real go test on a small module: the baseline and the
// change (a pre-existing failure in another package), then the change's
// tests on the base code, and proves them.
func TestLiveGoTest(t *testing.T) {
	t.Parallel()
	c := makeChange(t, map[string]string{
		"go.mod":          "module example.com/live\n\ngo 1.22\n",
		"num/abs.go":      "package num\n\n// Abs returns |x|.\nfunc Abs(x int) int { return x }\n",
		"num/abs_test.go": "package num\n\nimport \"testing\"\n\nfunc TestAbsPositive(t *testing.T) {\n\tif Abs(2) != 2 {\n\t\tt.Fatal(\"Abs(2) != 2\")\n\t}\n}\n",
		"env/env.go":      "package env\n",
		"env/env_test.go": "package env\n\nimport \"testing\"\n\nfunc TestMachine(t *testing.T) {\n\tt.Fatal(\"the machine's MIME table is missing\")\n}\n",
	}, map[string]string{
		"num/abs.go":        "package num\n\n// Abs returns |x|.\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n\n// Clamp bounds x to [lo, hi].\nfunc Clamp(x, lo, hi int) int { return min(max(x, lo), hi) }\n",
		"num/abs_test.go":   "package num\n\nimport \"testing\"\n\nfunc TestAbsPositive(t *testing.T) {\n\tif Abs(2) != 2 {\n\t\tt.Fatal(\"Abs(2) != 2\")\n\t}\n}\n\nfunc TestAbsNegative(t *testing.T) {\n\tif got := Abs(-2); got != 2 {\n\t\tt.Fatalf(\"Abs(-2) = %d, want 2\", got)\n\t}\n}\n",
		"num/clamp_test.go": "package num\n\nimport \"testing\"\n\nfunc TestClamp(t *testing.T) {\n\tif Clamp(5, 0, 3) != 3 {\n\t\tt.Fatal(\"no clamp\")\n\t}\n}\n",
	})
	const command = "go test ./..."
	baseline := run(t, c.base, command, goEnv...)
	after := run(t, c.head, command, goEnv...)
	got := Compare(&baseline, after)
	if got.Outcome != FailsPreexisting || len(got.Preexisting) != 1 || got.Preexisting[0].ID != "example.com/live/env TestMachine" {
		t.Errorf("Compare = %s %q, pre-existing %+v; want only example.com/live/env TestMachine pre-existing\nbaseline:\n%s\nchange:\n%s", got.Outcome, got.Reason, got.Preexisting, render(baseline), render(after))
	}

	narrowed, err := RunOnly(command, c.files, c.tests)
	if err != nil {
		t.Fatal(err)
	}
	if want := "go test -json -run '^(TestAbsNegative|TestClamp)$' ./num"; narrowed != want {
		t.Errorf("RunOnly = %q; want %q", narrowed, want)
	}
	p := Prove(ProofInput{Tests: c.tests, Files: c.files, Base: run(t, c.overlay(t, c.files), narrowed, goEnv...), Change: run(t, c.head, narrowed, goEnv...)})
	// TestClamp does not build on the base code, and takes its package's
	// other tests with it: TestAbsNegative is blocked, and proven on retry
	// without clamp_test.go.
	if len(p.Proven) != 1 || p.Proven[0].Name != "TestClamp" || len(p.Unproven) != 1 || p.Unproven[0].BlockedBy != "num/clamp_test.go" {
		t.Fatalf("Prove = %+v; want TestClamp proven and TestAbsNegative blocked by num/clamp_test.go", p)
	}
	files, tests := p.Retry(c.files, c.tests)
	if diff := cmp.Diff([]string{"num/abs_test.go"}, files); diff != "" || len(tests) != 1 || tests[0].Name != "TestAbsNegative" {
		t.Fatalf("Retry = %v, %+v; want num/abs_test.go and TestAbsNegative (%s)", files, tests, diff)
	}
	again, err := RunOnly(command, files, tests)
	if err != nil {
		t.Fatal(err)
	}
	p = p.Merge(Prove(ProofInput{Tests: tests, Files: files, Base: run(t, c.overlay(t, files), again, goEnv...), Change: run(t, c.head, again, goEnv...)}))
	if len(p.Unproven) != 0 || len(p.Proven) != 2 {
		t.Fatalf("Prove after the retry = %+v; want TestAbsNegative and TestClamp proven", p)
	}
	for _, r := range p.Proven {
		switch r.Name {
		case "TestAbsNegative":
			if r.BuildFailure || !strings.Contains(r.BaseFailure, "Abs(-2) = -2, want 2") {
				t.Errorf("TestAbsNegative proof = %+v; want its assertion's message", r)
			}
		case "TestClamp":
			if !r.BuildFailure || !strings.Contains(r.BaseFailure, "undefined: Clamp") {
				t.Errorf("TestClamp proof = %+v; want a build failure naming Clamp", r)
			}
		default:
			t.Errorf("unexpected proof %+v", r)
		}
	}
}

// TestLivePytest runs real pytest the same way: a fixed function with a
// parametrised regression test, and a new test file importing a function
// the change adds (an ImportError on the base code).
func TestLivePytest(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("pytest"); err != nil {
		t.Fatal("pytest not found on PATH: make test installs it (Debian's python3-pytest)")
	}
	c := makeChange(t, map[string]string{
		"conftest.py":        "",
		"calc.py":            "def sub(a, b):\n    return b - a\n",
		"tests/test_calc.py": "from calc import sub\n\n\ndef test_same():\n    assert sub(1, 1) == 0\n",
	}, map[string]string{
		"calc.py":            "def sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
		"tests/test_calc.py": "import pytest\n\nfrom calc import sub\n\n\ndef test_same():\n    assert sub(1, 1) == 0\n\n\n@pytest.mark.parametrize('a,b,want', [(1, 1, 0), (3, 1, 2)])\ndef test_sub(a, b, want):\n    assert sub(a, b) == want\n",
		"tests/test_mul.py":  "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
	})
	env := []string{"PYTHONDONTWRITEBYTECODE=1"}
	baseline := run(t, c.base, "pytest -p no:cacheprovider", env...)
	after := run(t, c.head, "pytest -p no:cacheprovider", env...)
	// Without -v pytest names no passing test: the files' suites stand
	// for them.
	if got := Compare(&baseline, after); got.Outcome != Passes || len(after.Suites) != 2 || after.Suites[0].Status != Passed || after.Suites[1].Status != Passed {
		t.Errorf("Compare = %s; want passes with two passing suites\n%s", got.Outcome, render(after))
	}
	narrowed, err := RunOnly("pytest -p no:cacheprovider", c.files, c.tests)
	if err != nil {
		t.Fatal(err)
	}
	base := run(t, c.overlay(t, c.files), narrowed, env...)
	p := Prove(ProofInput{Tests: c.tests, Files: c.files, Base: base, Change: run(t, c.head, narrowed, env...)})
	if len(p.Unproven) != 0 || len(p.Proven) != 2 {
		t.Fatalf("Prove = %+v; want test_sub and test_mul proven\nbase run of %q:\n%s", p, narrowed, render(base))
	}
	for _, r := range p.Proven {
		switch r.Name {
		case "test_sub":
			if r.BuildFailure || r.ID != "tests/test_calc.py::test_sub[3-1-2]" || !strings.Contains(r.BaseFailure, "assert -2 == 2") {
				t.Errorf("test_sub proof = %+v; want case [3-1-2] failing its assertion", r)
			}
		case "test_mul":
			if !r.BuildFailure || !strings.Contains(r.BaseFailure, "cannot import name 'mul'") {
				t.Errorf("test_mul proof = %+v; want an import error naming mul", r)
			}
		default:
			t.Errorf("unexpected proof %+v", r)
		}
	}
}
