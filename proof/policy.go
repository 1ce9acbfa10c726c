package proof

import (
	"fmt"
	"strings"
)

// RegressionPolicy is test_policy.regression of a repository's
// .github/agent-fix.yml: whether a bug fix needs a proven regression test.
type RegressionPolicy string

// The regression policies; the empty value means RegressionEncouraged.
const (
	// RegressionRequired makes a pull request without a proven regression
	// test a draft.
	RegressionRequired RegressionPolicy = "required"
	// RegressionEncouraged notes a missing proof in the pull request.
	RegressionEncouraged RegressionPolicy = "encouraged"
	// RegressionOff says nothing of regression tests.
	RegressionOff RegressionPolicy = "off"
)

// ParseRegressionPolicy reads test_policy.regression; "" is encouraged.
func ParseRegressionPolicy(s string) (RegressionPolicy, error) {
	switch p := RegressionPolicy(strings.TrimSpace(s)); p {
	case "":
		return RegressionEncouraged, nil
	case RegressionRequired, RegressionEncouraged, RegressionOff:
		return p, nil
	}
	return "", fmt.Errorf("test_policy.regression: %q is not one of required, encouraged, off", s)
}

// Policy is what the repository and the task say about tests.
type Policy struct {
	Regression RegressionPolicy
	// TestChangesAsked is set when the task asked for changes to tests,
	// CI or their configuration: integrity flags are then shown but do not
	// make a draft.
	TestChangesAsked bool
}

// Evidence is what the harness found out about a change.
type Evidence struct {
	// Tests compares the change's run of the test command with the
	// baseline; nil when no test command ran.
	Tests *Comparison
	// Proof is the regression proof; nil when none was attempted, and then
	// NoProof says why ("the change adds no test", "the test command
	// cannot be narrowed and …").
	Proof   *Proof
	NoProof string
	Flags   []Flag
}

// Decision says whether a pull request opens ready for review or as a
// draft, and what its body says about tests.
type Decision struct {
	Draft bool
	// Reasons say why it is a draft, one line each.
	Reasons []string
	// Notes say what the body tells the reviewer that does not make a
	// draft, one line each.
	Notes []string
}

// Decide turns the evidence into a decision under the policy: new or
// unclear test failures make a draft, pre-existing ones only a note; under
// required a change with no proven regression test is a draft, under
// encouraged it is noted, under off nothing is said; integrity flags that
// weaken the tests make a draft unless the task asked for test changes;
// edits to existing tests are named.
func Decide(p Policy, e Evidence) Decision {
	var d Decision
	reason := func(s string) { d.Reasons = append(d.Reasons, s) }
	note := func(s string) { d.Notes = append(d.Notes, s) }

	if c := e.Tests; c != nil {
		switch c.Outcome {
		case FailsPreexisting:
			note(fmt.Sprintf("Only pre-existing failures: %s. They fail on the base commit too, so they do not make this pull request a draft.", labels(c.Preexisting)))
		case FailsNew, FailsUnclear:
			reason(c.Reason)
		}
	}

	policy := p.Regression
	if policy == "" {
		policy = RegressionEncouraged
	}
	if policy != RegressionOff && (e.Proof == nil || len(e.Proof.Proven) == 0) {
		why := e.NoProof
		switch {
		case e.Proof != nil && len(e.Proof.Unproven) > 0:
			u := e.Proof.Unproven[0]
			why = fmt.Sprintf("%s %s", u.Name, u.Reason)
			if n := len(e.Proof.Unproven) - 1; n > 0 {
				why += fmt.Sprintf(" (and %d more not proven)", n)
			}
		case why == "":
			why = "the change adds or edits no test"
		}
		if policy == RegressionRequired {
			reason("No regression test is proven to fail on the base commit and pass on the change (test_policy.regression: required): " + why + ".")
		} else {
			note("No regression test is proven to fail on the base commit and pass on the change: " + why + ".")
		}
	}

	var weak, edited []string
	first := ""
	for _, f := range e.Flags {
		if f.Kind.Weakens() {
			weak = append(weak, f.String())
			if first == "" {
				first = f.String()
			}
		} else if f.Kind == EditedTest {
			edited = append(edited, f.Test+" ("+f.Path+")")
		}
	}
	if len(weak) > 0 {
		what := fmt.Sprintf("The change weakens its tests or checks: %s", first)
		if len(weak) > 1 {
			what += fmt.Sprintf(" (and %d more)", len(weak)-1)
		}
		if p.TestChangesAsked {
			note(what + ". The task asked for test changes, so this does not make the pull request a draft.")
		} else {
			reason(what + ".")
		}
	}
	if len(edited) > 0 {
		note("Edits existing tests: " + strings.Join(edited, ", ") + ".")
	}
	d.Draft = len(d.Reasons) > 0
	return d
}
