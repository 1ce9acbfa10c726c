package proof

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to make it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", p, diff)
	}
}

// render writes a run as text for golden files.
func render(r Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "formats: %v\ncomplete: %v\ncut: %v\n", r.Formats, r.Complete, r.Cut)
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	for _, s := range r.Suites {
		fmt.Fprintf(&b, "suite %s: %s", s.Name, s.Status)
		if s.Error != "" {
			fmt.Fprintf(&b, " (%s)", s.Error)
		}
		if len(s.Files) > 0 {
			fmt.Fprintf(&b, " files %v", s.Files)
		}
		b.WriteString("\n")
		writeMessage(&b, s.Message)
	}
	for _, t := range r.Tests {
		fmt.Fprintf(&b, "test %s [%s | %s]: %s\n", t.ID, t.Suite, t.Name, t.Status)
		writeMessage(&b, t.Message)
	}
	return b.String()
}

func writeMessage(b *strings.Builder, m string) {
	if m == "" {
		return
	}
	for _, l := range strings.Split(m, "\n") {
		fmt.Fprintf(b, "    | %s\n", l)
	}
}

func readFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readReports(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	if dir == "" {
		return nil
	}
	files, err := filepath.Glob(filepath.Join("testdata", dir, "TEST-*.xml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no reports in %s: %v", dir, err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out["target/surefire-reports/"+filepath.Base(f)] = b
	}
	return out
}

// fixture is a captured run of a real tool (testdata/README.md says how
// each was made) and what Parse must read in it.
type fixture struct {
	name, file, command, dir, reports string
	exit                              int
	formats                           []Format
	complete                          bool
	failed                            []string          // the failed tests' IDs, all of them
	passed                            []string          // some tests that passed
	suiteErrors                       map[string]string // suite → Error, all of them
}

var fixtures = []fixture{
	{name: "go plain", file: "go/plain.txt", command: "go test ./...", exit: 1, formats: []Format{GoTest}, complete: true,
		failed:      []string{"example.com/fx/calc TestFatal", "example.com/fx/calc TestTable", "example.com/fx/calc TestTable/wrong", "example.com/fx/panicky TestPanics"},
		suiteErrors: map[string]string{"example.com/fx/broken": "build failed"}},
	{name: "go -v", file: "go/v.txt", command: "go test -v ./...", exit: 1, formats: []Format{GoTest}, complete: true,
		failed:      []string{"example.com/fx/calc TestFatal", "example.com/fx/calc TestTable", "example.com/fx/calc TestTable/wrong", "example.com/fx/panicky TestPanics"},
		passed:      []string{"example.com/fx/calc TestAdd", "example.com/fx/calc TestTable/with_space", "example.com/fx/panicky TestFine"},
		suiteErrors: map[string]string{"example.com/fx/broken": "build failed"}},
	{name: "go -json", file: "go/json.txt", command: "go test -json ./...", exit: 1, formats: []Format{GoTest}, complete: true,
		failed:      []string{"example.com/fx/calc TestFatal", "example.com/fx/calc TestTable", "example.com/fx/calc TestTable/wrong", "example.com/fx/panicky TestPanics"},
		passed:      []string{"example.com/fx/calc TestAdd", "example.com/fx/calc TestTable/small", "example.com/fx/panicky TestFine"},
		suiteErrors: map[string]string{"example.com/fx/broken": "build failed"}},
	{name: "go exit and time-out", file: "go/exit_plain.txt", command: "go test -timeout 1s ./...", exit: 1, formats: []Format{GoTest}, complete: true,
		failed:      []string{"example.com/fx2/slow TestSlow"},
		suiteErrors: map[string]string{"example.com/fx2/exits": "exited"}},
	{name: "go -json exit and time-out", file: "go/exit_json.txt", command: "go test -json -timeout 1s ./...", exit: 1, formats: []Format{GoTest}, complete: true,
		failed: []string{"example.com/fx2/exits TestExits", "example.com/fx2/slow TestSlow"},
		passed: []string{"example.com/fx2/exits TestFirst", "example.com/fx2/slow TestQuick"}},
	{name: "go -json, old Go's plain build errors", file: "go/json_oldbuild.txt", command: "go test -json ./...", exit: 1, formats: []Format{GoTest}, complete: true,
		failed:      []string{"example.com/fx/calc TestFatal", "example.com/fx/calc TestTable", "example.com/fx/calc TestTable/wrong", "example.com/fx/panicky TestPanics"},
		passed:      []string{"example.com/fx/calc TestAdd"},
		suiteErrors: map[string]string{"example.com/fx/broken": "build failed"}},
	{name: "go behind make", file: "go/v.txt", command: "make test", exit: 2, formats: []Format{GoTest}, complete: true,
		failed:      []string{"example.com/fx/calc TestFatal", "example.com/fx/calc TestTable", "example.com/fx/calc TestTable/wrong", "example.com/fx/panicky TestPanics"},
		suiteErrors: map[string]string{"example.com/fx/broken": "build failed"}},

	{name: "pytest", file: "pytest/default.txt", command: "pytest", dir: "/tmp/fx/py", exit: 1, formats: []Format{Pytest}, complete: true,
		failed: []string{"tests/test_calc.py::TestGroup::test_method_fails", "tests/test_calc.py::test_add_wrong", "tests/test_calc.py::test_ids[with::colons]", "tests/test_calc.py::test_param[2-2-5]", "tests/test_calc.py::test_uses_broken"}},
	{name: "pytest -v", file: "pytest/v.txt", command: "python3 -m pytest -v", dir: "/tmp/fx/py", exit: 1, formats: []Format{Pytest}, complete: true,
		failed: []string{"tests/test_calc.py::TestGroup::test_method_fails", "tests/test_calc.py::test_add_wrong", "tests/test_calc.py::test_ids[with::colons]", "tests/test_calc.py::test_param[2-2-5]", "tests/test_calc.py::test_uses_broken"},
		passed: []string{"tests/test_calc.py::test_ids[with space]", "tests/test_calc.py::test_ids[brackets[]]", "tests/test_calc.py::test_xpass", "tests/test_other.py::test_other", "tests/test_calc.py::TestGroup::test_method"}},
	{name: "pytest -rA", file: "pytest/rA.txt", command: "pytest -rA", dir: "/tmp/fx/py", exit: 1, formats: []Format{Pytest}, complete: true,
		failed: []string{"tests/test_calc.py::TestGroup::test_method_fails", "tests/test_calc.py::test_add_wrong", "tests/test_calc.py::test_ids[with::colons]", "tests/test_calc.py::test_param[2-2-5]", "tests/test_calc.py::test_uses_broken"},
		passed: []string{"tests/test_calc.py::test_param[1-1-2]", "tests/test_other.py::test_other"}},
	{name: "pytest -q", file: "pytest/q.txt", command: "poetry run pytest -q", dir: "/tmp/fx/py", exit: 1, formats: []Format{Pytest}, complete: true,
		failed: []string{"tests/test_calc.py::TestGroup::test_method_fails", "tests/test_calc.py::test_add_wrong", "tests/test_calc.py::test_ids[with::colons]", "tests/test_calc.py::test_param[2-2-5]", "tests/test_calc.py::test_uses_broken"}},
	{name: "pytest -s -v", file: "pytest/s_v.txt", command: "pytest -s -v", dir: "/tmp/fx/py", formats: []Format{Pytest}, complete: true,
		passed: []string{"tests/test_other.py::test_other", "tests/test_calc.py::test_add"}},
	{name: "pytest collection error", file: "pytest/collect.txt", command: "pytest tests tests2", dir: "/tmp/fx/py", exit: 2, formats: []Format{Pytest}, complete: false,
		suiteErrors: map[string]string{"tests2/test_broken.py": "collection error"}},
	{name: "pytest behind tox", file: "pytest/collect_v.txt", command: "tox -e py311", dir: "/tmp/fx/py", exit: 2, formats: []Format{Pytest}, complete: false,
		suiteErrors: map[string]string{"tests2/test_broken.py": "collection error"}},

	{name: "jest", file: "jest/default.txt", command: "npx jest", dir: "/tmp/fx/jest", exit: 1, formats: []Format{Jest}, complete: true,
		failed:      []string{"src/calc.test.js › add › add(2, 2) = 5", "src/calc.test.js › add › is wrong", "src/calc.test.js › top level throws"},
		suiteErrors: map[string]string{"src/broken.test.js": "failed to run"}},
	{name: "jest --verbose", file: "jest/verbose.txt", command: "npm test", dir: "/tmp/fx/jest", exit: 1, formats: []Format{Jest}, complete: true,
		failed:      []string{"src/calc.test.js › add › add(2, 2) = 5", "src/calc.test.js › add › is wrong", "src/calc.test.js › top level throws"},
		passed:      []string{"src/calc.test.js › add › nested group › works deep", "src/__tests__/other.js › other passes", "src/calc.test.js › add › add(1, 1) = 2"},
		suiteErrors: map[string]string{"src/broken.test.js": "failed to run"}},
	{name: "jest one file", file: "jest/single.txt", command: "npx jest src/calc.test.js", dir: "/tmp/fx/jest", exit: 1, formats: []Format{Jest}, complete: true,
		failed: []string{"src/calc.test.js › add › add(2, 2) = 5", "src/calc.test.js › add › is wrong", "src/calc.test.js › top level throws"},
		passed: []string{"src/calc.test.js › add › adds"}},
	{name: "jest --json", file: "jest/json.txt", command: "yarn jest --json", dir: "/tmp/fx/jest", exit: 1, formats: []Format{Jest}, complete: true,
		failed:      []string{"src/calc.test.js › add › add(2, 2) = 5", "src/calc.test.js › add › is wrong", "src/calc.test.js › top level throws"},
		passed:      []string{"src/calc.test.js › add › nested group › works deep", "src/__tests__/other.js › other passes"},
		suiteErrors: map[string]string{"src/broken.test.js": "failed to run"}},

	{name: "vitest, colours", file: "vitest/default.txt", command: "npx vitest run", dir: "/tmp/fx/vitest", exit: 1, formats: []Format{Vitest}, complete: true,
		failed:      []string{"src/calc.test.js > add > add(2, 2) = 5", "src/calc.test.js > add > is wrong", "src/calc.test.js > top level throws"},
		suiteErrors: map[string]string{"src/broken.test.js": "failed to run"}},
	{name: "vitest verbose", file: "vitest/verbose.txt", command: "npm run test:unit", dir: "/tmp/fx/vitest", exit: 1, formats: []Format{Vitest}, complete: true,
		failed:      []string{"src/calc.test.js > add > add(2, 2) = 5", "src/calc.test.js > add > is wrong", "src/calc.test.js > top level throws"},
		passed:      []string{"src/calc.test.js > add > nested group > works deep", "src/other.test.js > other passes"},
		suiteErrors: map[string]string{"src/broken.test.js": "failed to run"}},
	{name: "vitest json", file: "vitest/json.txt", command: "pnpm vitest run --reporter=json", dir: "/tmp/fx/vitest", exit: 1, formats: []Format{Vitest}, complete: true,
		failed:      []string{"src/calc.test.js > add > add(2, 2) = 5", "src/calc.test.js > add > is wrong", "src/calc.test.js > top level throws"},
		passed:      []string{"src/calc.test.js > add > adds", "src/other.test.js > other passes"},
		suiteErrors: map[string]string{"src/broken.test.js": "failed to run"}},

	{name: "cargo --no-fail-fast", file: "cargo/no_fail_fast.txt", command: "cargo test --no-fail-fast", exit: 101, formats: []Format{Cargo}, complete: true,
		failed: []string{"doc-tests (calc) calc/src/lib.rs - add (line 7)", "src/lib.rs (calc) tests::is_wrong", "src/lib.rs (calc) tests::nested::deep"},
		passed: []string{"doc-tests (calc) calc/src/lib.rs - add (line 3)", "src/lib.rs (calc) tests::panics_ok", "src/lib.rs (util) tests::identity", "tests/integration.rs (integration) integrates"}},
	{name: "cargo stops at the first failing binary", file: "cargo/stop.txt", command: "cargo +stable test", exit: 101, formats: []Format{Cargo}, complete: false,
		failed: []string{"src/lib.rs (calc) tests::is_wrong", "src/lib.rs (calc) tests::nested::deep"},
		passed: []string{"src/lib.rs (calc) tests::adds"}},
	{name: "cargo with backtraces", file: "cargo/backtrace.txt", command: "RUST_BACKTRACE=1 cargo test -p calc --lib", exit: 101, formats: []Format{Cargo}, complete: false,
		failed: []string{"src/lib.rs (calc) tests::is_wrong", "src/lib.rs (calc) tests::nested::deep"}},
	{name: "cargo compile error", file: "cargo/build.txt", command: "cargo test", exit: 101, formats: []Format{Cargo}, complete: false,
		suiteErrors: map[string]string{`calc (test "integration")`: "build failed"}},

	{name: "surefire junit4", file: "surefire/junit4/output.txt", reports: "surefire/junit4", command: "mvn -B test", dir: "/tmp/fx/mvn", exit: 1, formats: []Format{Surefire}, complete: true,
		failed: []string{"com.example.CalcTest#isWrong", "com.example.CalcTest#throwsError"},
		passed: []string{"com.example.CalcTest#adds", "com.example.OtherTest#passes"}},
	{name: "surefire junit5, quiet", file: "surefire/junit5/output.txt", reports: "surefire/junit5", command: "./mvnw -q test", dir: "/tmp/fx/mvn5", exit: 1, formats: []Format{Surefire}, complete: false,
		failed: []string{"com.example.CalcTest#isWrong", "com.example.CalcTest#table{int, int, int}[2]", "com.example.CalcTest$Inner#innerFails"},
		passed: []string{"com.example.CalcTest#table{int, int, int}[1]", "com.example.CalcTest#displayed"}},
	{name: "maven compile error", file: "surefire/compile/output.txt", command: "mvn test", dir: "/tmp/fx/mvn", exit: 1, formats: []Format{Surefire}, complete: false,
		suiteErrors: map[string]string{"calc (testCompile)": "build failed"}},

	{name: "no parser", file: "go/vet.txt", command: "go vet ./...", exit: 1},
}

func TestParseFixtures(t *testing.T) {
	t.Parallel()
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			t.Parallel()
			r := Parse(Input{Command: fx.command, ExitCode: fx.exit, Output: readFixture(t, fx.file), Dir: fx.dir, Reports: readReports(t, fx.reports)})
			if diff := cmp.Diff(fx.formats, r.Formats); diff != "" {
				t.Errorf("formats (-want +got):\n%s", diff)
			}
			if r.Complete != fx.complete {
				t.Errorf("complete = %v, want %v", r.Complete, fx.complete)
			}
			var failed []string
			for _, x := range r.Failures() {
				failed = append(failed, x.ID)
			}
			want := append([]string(nil), fx.failed...)
			sort.Strings(want)
			if diff := cmp.Diff(want, failed); diff != "" {
				t.Errorf("failed tests (-want +got):\n%s", diff)
			}
			for _, id := range fx.passed {
				if x, ok := r.Test(id); !ok || x.Status != Passed {
					t.Errorf("test %q = %+v, %v; want passed", id, x, ok)
				}
			}
			errs := map[string]string{}
			for _, s := range r.SuiteErrors() {
				errs[s.Name] = s.Error
			}
			if fx.suiteErrors == nil {
				fx.suiteErrors = map[string]string{}
			}
			if diff := cmp.Diff(fx.suiteErrors, errs); diff != "" {
				t.Errorf("suite errors (-want +got):\n%s", diff)
			}
			for _, x := range r.Failures() {
				if x.Message == "" && !strings.HasPrefix(x.ID, "example.com/fx/calc TestTable") {
					t.Errorf("failed test %s has no message", x.ID)
				}
			}
			if r.Tail == "" {
				t.Error("no tail")
			}
		})
	}
}

// TestParseGolden keeps the whole reading of every fixture, messages
// included, in testdata/<tool>/<fixture>.golden.
func TestParseGolden(t *testing.T) {
	t.Parallel()
	for _, fx := range fixtures {
		if fx.formats == nil {
			continue
		}
		t.Run(fx.name, func(t *testing.T) {
			t.Parallel()
			r := Parse(Input{Command: fx.command, ExitCode: fx.exit, Output: readFixture(t, fx.file), Dir: fx.dir, Reports: readReports(t, fx.reports)})
			name := strings.NewReplacer(" ", "_", ",", "", "-", "", "'", "").Replace(fx.name)
			golden(t, filepath.Join(filepath.Dir(fx.file), name+".golden"), render(r))
		})
	}
}
