package proof

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mkRun returns a run of command with its tests sorted as Parse sorts
// them.
func mkRun(command string, exit int, complete bool, suites []Suite, tests ...Test) *Run {
	sort.Slice(tests, func(i, j int) bool { return tests[i].ID < tests[j].ID })
	r := &Run{Command: command, ExitCode: exit, Complete: complete, Suites: suites, Tests: tests}
	if len(suites) > 0 || len(tests) > 0 {
		r.Formats = []Format{GoTest}
	}
	return r
}

func gt(pkg, name string, st Status) Test {
	return Test{ID: pkg + " " + name, Suite: pkg, Name: name, Status: st, Message: map[Status]string{Failed: name + " failed"}[st]}
}

func ids(fs []Failure) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Label())
	}
	return out
}

func TestCompare(t *testing.T) {
	t.Parallel()
	const gotest = "go test ./..."
	a, b := "m/a", "m/b"
	passing := mkRun(gotest, 0, true, []Suite{{Name: a, Status: Passed}, {Name: b, Status: Passed}})
	for _, tc := range []struct {
		name                     string
		base, change             *Run
		want                     Outcome
		pre, new, unclear, fixed []string
	}{
		{name: "passes", base: passing, change: passing, want: Passes},
		{name: "only pre-existing failures",
			base:   mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestMIME", Failed), gt(a, "TestOK", Passed)),
			change: mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestMIME", Failed), gt(a, "TestOK", Passed)),
			want:   FailsPreexisting, pre: []string{"m/a TestMIME"}},
		{name: "a new failure of a test that passed",
			base:   mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestMIME", Failed), gt(a, "TestOK", Passed)),
			change: mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestMIME", Failed), gt(a, "TestOK", Failed)),
			want:   FailsNew, pre: []string{"m/a TestMIME"}, new: []string{"m/a TestOK"}},
		{name: "a new test that fails",
			base:   mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestMIME", Failed)),
			change: mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestMIME", Failed), gt(a, "TestNew", Failed)),
			want:   FailsNew, pre: []string{"m/a TestMIME"}, new: []string{"m/a TestNew"}},
		{name: "a failure in a suite that passed on base (go test without -v)",
			base:   mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}, {Name: b, Status: Passed}}, gt(a, "TestMIME", Failed)),
			change: mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}, {Name: b, Status: Failed}}, gt(a, "TestMIME", Failed), gt(b, "TestX", Failed)),
			want:   FailsNew, pre: []string{"m/a TestMIME"}, new: []string{"m/b TestX"}},
		{name: "base passed as a whole, without per-test results",
			base:   &Run{Command: "make test", ExitCode: 0},
			change: mkRun("make test", 2, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestX", Failed)),
			want:   FailsNew, new: []string{"m/a TestX"}},
		{name: "base passed, change fails with no per-test results",
			base: &Run{Command: "make test"}, change: &Run{Command: "make test", ExitCode: 2},
			want: FailsNew},
		{name: "both fail with no per-test results",
			base: &Run{Command: "make test", ExitCode: 2}, change: &Run{Command: "make test", ExitCode: 2},
			want: FailsUnclear},
		{name: "base has no per-test results and failed",
			base:   &Run{Command: "make test", ExitCode: 2},
			change: mkRun("make test", 2, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestX", Failed)),
			want:   FailsUnclear, unclear: []string{"m/a TestX"}},
		{name: "no baseline",
			change: mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestX", Failed)),
			want:   FailsUnclear, unclear: []string{"m/a TestX"}},
		{name: "base output cut, failure not in what was kept",
			base:   &Run{Command: gotest, ExitCode: 1, Cut: true, Formats: []Format{GoTest}, Tests: []Test{gt(a, "TestMIME", Failed)}, Suites: []Suite{{Name: a, Status: Failed}}},
			change: mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}, {Name: b, Status: Failed}}, gt(a, "TestMIME", Failed), gt(b, "TestX", Failed)),
			want:   FailsUnclear, pre: []string{"m/a TestMIME"}, unclear: []string{"m/b TestX"}},
		{name: "change output cut: hidden failures possible",
			base:   mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestMIME", Failed)),
			change: &Run{Command: gotest, ExitCode: 1, Cut: true, Formats: []Format{GoTest}, Tests: []Test{gt(a, "TestMIME", Failed)}},
			want:   FailsUnclear, pre: []string{"m/a TestMIME"}},
		{name: "change timed out",
			base:   mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestMIME", Failed)),
			change: &Run{Command: gotest, ExitCode: -1, TimedOut: true, Formats: []Format{GoTest}, Tests: []Test{gt(a, "TestMIME", Failed)}},
			want:   FailsUnclear, pre: []string{"m/a TestMIME"}},
		{name: "make test with another exit code: something else failed",
			base:   mkRun("make test", 2, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestMIME", Failed)),
			change: mkRun("make test", 1, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestMIME", Failed)),
			want:   FailsUnclear, pre: []string{"m/a TestMIME"}},
		{name: "make test with the same exit code",
			base:   mkRun("make test", 2, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestMIME", Failed)),
			change: mkRun("make test", 2, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestMIME", Failed)),
			want:   FailsPreexisting, pre: []string{"m/a TestMIME"}},
		{name: "a build failure on both",
			base:   mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed, Error: "build failed"}}),
			change: mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed, Error: "build failed"}}),
			want:   FailsPreexisting, pre: []string{"m/a (build failed)"}},
		{name: "a new build failure",
			base:   mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}, {Name: b, Status: Passed}}, gt(a, "TestMIME", Failed)),
			change: mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}, {Name: b, Status: Failed, Error: "build failed"}}, gt(a, "TestMIME", Failed)),
			want:   FailsNew, pre: []string{"m/a TestMIME"}, new: []string{"m/b (build failed)"}},
		{name: "a test of a suite that did not build on base",
			base:   mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed, Error: "build failed"}}),
			change: mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestX", Failed)),
			want:   FailsUnclear, unclear: []string{"m/a TestX"}, fixed: []string{"m/a (build failed)"}},
		{name: "fixed: passes, or its suite passes",
			base:   mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}, {Name: b, Status: Failed}}, gt(a, "TestBug", Failed), gt(b, "TestOther", Failed), gt(a, "TestMIME", Failed)),
			change: mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}, {Name: b, Status: Passed}}, gt(a, "TestBug", Passed), gt(a, "TestMIME", Failed)),
			want:   FailsPreexisting, pre: []string{"m/a TestMIME"}, fixed: []string{"m/a TestBug", "m/b TestOther"}},
		{name: "fixed, not when skipped",
			base:   mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestBug", Failed)),
			change: mkRun(gotest, 1, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestBug", Skipped), gt(a, "TestMIME", Failed)),
			want:   FailsNew, new: []string{"m/a TestMIME"}},
		{name: "exit 0 hiding failures (a pipe)",
			base:   mkRun("go test ./... | tail", 0, true, []Suite{{Name: a, Status: Passed}}),
			change: mkRun("go test ./... | tail", 0, true, []Suite{{Name: a, Status: Failed}}, gt(a, "TestX", Failed)),
			want:   FailsNew, new: []string{"m/a TestX"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Compare(tc.base, *tc.change)
			if got.Outcome != tc.want {
				t.Errorf("outcome = %s (%s); want %s", got.Outcome, got.Reason, tc.want)
			}
			if got.OnlyPreexisting() != (tc.want == FailsPreexisting) {
				t.Errorf("OnlyPreexisting = %v with outcome %s", got.OnlyPreexisting(), got.Outcome)
			}
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"pre-existing", ids(got.Preexisting), tc.pre}, {"new", ids(got.New), tc.new}, {"unclear", ids(got.Unclear), tc.unclear}, {"fixed", ids(got.Fixed), tc.fixed}} {
				if diff := cmp.Diff(c.want, c.got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", c.what, diff)
				}
			}
		})
	}
}

// TestCompareGolden keeps what Compare says to people about the real
// fixtures and the hand-made cases above.
func TestCompareGolden(t *testing.T) {
	t.Parallel()
	parse := func(fx, command, dir string, exit int) Run {
		return Parse(Input{Command: command, ExitCode: exit, Output: readFixture(t, fx), Dir: dir})
	}
	var b strings.Builder
	for _, c := range []struct {
		name         string
		base, change Run
	}{
		{"go: the same failures, read plain on base and -json on the change", parse("go/plain.txt", "go test ./...", "", 1), parse("go/json.txt", "go test ./...", "", 1)},
		{"go: base passes, the change has failures", Run{Command: "go test ./..."}, parse("go/v.txt", "go test -v ./...", "", 1)},
		{"pytest: pre-existing failures and a collection error that is new", parse("pytest/default.txt", "pytest", "/tmp/fx/py", 1), parse("pytest/collect.txt", "pytest", "/tmp/fx/py", 2)},
		{"pytest: the collection error is gone", parse("pytest/collect.txt", "pytest", "/tmp/fx/py", 2), parse("pytest/v.txt", "pytest", "/tmp/fx/py", 1)},
		{"cargo: base stopped early", parse("cargo/stop.txt", "cargo test", "", 101), parse("cargo/no_fail_fast.txt", "cargo test", "", 101)},
		{"jest: the same failures, verbose on the change", parse("jest/default.txt", "npx jest", "/tmp/fx/jest", 1), parse("jest/json.txt", "npx jest", "/tmp/fx/jest", 1)},
	} {
		got := Compare(&c.base, c.change)
		fmt.Fprintf(&b, "## %s\n%s: %s\n", c.name, got.Outcome, got.Reason)
		for _, group := range []struct {
			what string
			fs   []Failure
		}{{"pre-existing", got.Preexisting}, {"new", got.New}, {"unclear", got.Unclear}, {"fixed", got.Fixed}} {
			for _, f := range group.fs {
				fmt.Fprintf(&b, "- %s: %s", group.what, f.Label())
				if f.Base != "" {
					fmt.Fprintf(&b, " (%s)", f.Base)
				}
				b.WriteString("\n")
			}
		}
		fmt.Fprintf(&b, "passed %d, failed %d, skipped %d\n\n", got.Passed, got.Failed, got.Skipped)
	}
	golden(t, "compare.golden", b.String())
}
