package proof

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseRegressionPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want RegressionPolicy
		ok   bool
	}{
		{"", RegressionEncouraged, true},
		{"required", RegressionRequired, true},
		{" encouraged ", RegressionEncouraged, true},
		{"off", RegressionOff, true},
		{"mandatory", "", false},
		{"Required", "", false},
	} {
		got, err := ParseRegressionPolicy(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseRegressionPolicy(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "required, encouraged, off") {
			t.Errorf("error %q does not list the valid values", err)
		}
	}
}

var (
	proven   = &Proof{Proven: []Regression{{Path: "num/abs_test.go", Name: "TestAbsNegative", BaseFailure: "Abs(-2) = -2, want 2"}}}
	unproven = &Proof{Unproven: []Unproven{{Path: "num/abs_test.go", Name: "TestAbsNegative", Reason: "passes on the base commit"}, {Path: "num/b_test.go", Name: "TestB", Reason: "fails on the change"}}}
	passes   = &Comparison{Outcome: Passes, Reason: "The tests pass on the change."}
	preOnly  = &Comparison{Outcome: FailsPreexisting, Reason: "Every failure on the change also fails on the base commit: m/env TestMIME.", Preexisting: []Failure{{ID: "m/env TestMIME"}}}
	newFail  = &Comparison{Outcome: FailsNew, Reason: "1 failure on the change does not fail on the base commit: m/num TestAbs."}
	unclear  = &Comparison{Outcome: FailsUnclear, Reason: "The test command failed with exit code 2 on the change, and its output has no per-test results to compare with the base commit."}
	skipFlag = Flag{Kind: AddedSkip, Path: "num/abs_test.go", Line: 12, Reason: "adds a skip: `t.Skip(\"flaky\")`"}
	ciFlag   = Flag{Kind: CIConfig, Path: ".github/workflows/ci.yml", Line: 3, Reason: "changes CI configuration"}
	editFlag = Flag{Kind: EditedTest, Path: "num/abs_test.go", Line: 5, Test: "TestAbsPositive", Reason: "edits the body of existing test TestAbsPositive"}
)

var decideCases = []struct {
	name  string
	p     Policy
	e     Evidence
	draft bool
}{
	{"a proven fix", Policy{}, Evidence{Tests: passes, Proof: proven}, false},
	{"encouraged, no test", Policy{}, Evidence{Tests: passes, NoProof: "the change adds no test"}, false},
	{"required, no test", Policy{Regression: RegressionRequired}, Evidence{Tests: passes, NoProof: "the change adds no test"}, true},
	{"required, tests not proven", Policy{Regression: RegressionRequired}, Evidence{Tests: passes, Proof: unproven}, true},
	{"required and proven", Policy{Regression: RegressionRequired}, Evidence{Tests: passes, Proof: proven}, false},
	{"off, no test", Policy{Regression: RegressionOff}, Evidence{Tests: passes}, false},
	{"only pre-existing failures", Policy{}, Evidence{Tests: preOnly, Proof: proven}, false},
	{"a new failure", Policy{}, Evidence{Tests: newFail, Proof: proven}, true},
	{"failures that cannot be compared", Policy{}, Evidence{Tests: unclear, Proof: proven}, true},
	{"no test command", Policy{}, Evidence{Proof: proven}, false},
	{"an added skip", Policy{}, Evidence{Tests: passes, Proof: proven, Flags: []Flag{skipFlag, ciFlag}}, true},
	{"an added skip the task asked for", Policy{TestChangesAsked: true}, Evidence{Tests: passes, Proof: proven, Flags: []Flag{skipFlag}}, false},
	{"an edited test is named, not a draft", Policy{}, Evidence{Tests: passes, Proof: proven, Flags: []Flag{editFlag}}, false},
	{"everything at once", Policy{Regression: RegressionRequired}, Evidence{Tests: newFail, Proof: unproven, Flags: []Flag{editFlag, skipFlag}}, true},
}

func TestDecide(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for _, tc := range decideCases {
		d := Decide(tc.p, tc.e)
		if d.Draft != tc.draft || d.Draft != (len(d.Reasons) > 0) {
			t.Errorf("%s: Decide = %+v; want draft %v", tc.name, d, tc.draft)
		}
		fmt.Fprintf(&b, "## %s\ndraft: %v\n", tc.name, d.Draft)
		for _, r := range d.Reasons {
			fmt.Fprintf(&b, "- reason: %s\n", r)
		}
		for _, n := range d.Notes {
			fmt.Fprintf(&b, "- note: %s\n", n)
		}
	}
	golden(t, "decide.golden", b.String())
}
