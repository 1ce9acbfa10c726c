package proof

import (
	"fmt"
	"strings"
)

// Outcome is how the change's run of the test command compares with the
// base commit's.
type Outcome string

// The outcomes of Compare.
const (
	// Passes: the change's run passed.
	Passes Outcome = "passes"
	// FailsPreexisting: the change's run failed, and every failure also
	// fails on the base commit, by name; nothing else can explain the exit.
	FailsPreexisting Outcome = "fails-preexisting"
	// FailsNew: the change's run has a failure the base commit's run does
	// not have, or the base commit passed and the change does not.
	FailsNew Outcome = "fails-new"
	// FailsUnclear: the change's run failed, and what fails cannot be told
	// apart from the base commit's failures: no per-test results, output
	// cut, a time-out, no baseline.
	FailsUnclear Outcome = "fails-unclear"
)

// Failure is a failing test, or a suite that failed as a whole, in a
// comparison.
type Failure struct {
	// ID is the test's Test.ID, or the suite's name for a suite failure.
	ID    string
	Suite string
	// Error is the Suite.Error of a suite failure; empty for a test.
	Error string
	// Message holds the first lines of the failure: on the change, or, for
	// Fixed, on the base commit.
	Message string
	// Base says what the base commit's run showed of it, for New and
	// Unclear ("passed on the base commit", "not in the base commit's
	// run", "the base commit's output was cut"), or, for Fixed, what the
	// change's run showed ("passed on the change").
	Base string
}

// Label names the failure for people: the test's ID, or the suite with how
// it failed ("example.com/m/pkg (build failed)").
func (f Failure) Label() string {
	if f.Error != "" {
		return f.ID + " (" + f.Error + ")"
	}
	return f.ID
}

// Comparison is the change's run of the test command set against the base
// commit's run of the same command (the baseline).
type Comparison struct {
	Outcome Outcome
	// Reason says in one sentence why, for people.
	Reason string
	// The change's failures: those that fail on the base commit too (by
	// name), those that do not, and those the baseline says nothing of.
	Preexisting, New, Unclear []Failure
	// Fixed lists the baseline's failures the change's run shows passing:
	// the test passed, or its suite passed as a whole, or its suite ran to
	// the end of a complete run without failing it.
	Fixed []Failure
	// Passed, Failed and Skipped count the change's per-test results.
	Passed, Failed, Skipped int
}

// OnlyPreexisting reports whether the change's run fails and its only
// failures are pre-existing: then they do not make the pull request a
// draft.
func (c Comparison) OnlyPreexisting() bool { return c.Outcome == FailsPreexisting }

// Compare sets the change's run against the base commit's run of the same
// command; base is nil when there is no baseline. It never claims more than
// the runs show: a failure is pre-existing only when the base commit's run
// shows the same test (or suite) failing; new only when that run shows it
// passing, shows its suite passing, is complete without it, or passed as a
// whole; otherwise unclear. A failing run is FailsPreexisting only when it
// is complete (nothing hidden) and its exit is explained by its failures:
// the command is one test tool, or the base commit failed with the same
// exit code.
func Compare(base *Run, change Run) Comparison {
	var c Comparison
	for _, t := range change.Tests {
		switch t.Status {
		case Passed:
			c.Passed++
		case Failed:
			c.Failed++
		case Skipped:
			c.Skipped++
		}
	}
	for _, t := range change.Failures() {
		c.sort(Failure{ID: t.ID, Suite: t.Suite, Message: t.Message}, baseOfTest(base, t))
	}
	for _, s := range change.SuiteErrors() {
		c.sort(Failure{ID: s.Name, Suite: s.Name, Error: s.Error, Message: s.Message}, baseOfSuite(base, s))
	}
	if base != nil {
		c.Fixed = fixed(*base, change)
	}
	c.Outcome, c.Reason = c.judge(base, change)
	return c
}

// evidence is what one run shows of a test or suite of the other.
type evidence struct {
	state string // "failed", "not failed" or "unknown"
	why   string
}

func (c *Comparison) sort(f Failure, e evidence) {
	f.Base = e.why
	switch e.state {
	case "failed":
		f.Base = ""
		c.Preexisting = append(c.Preexisting, f)
	case "not failed":
		c.New = append(c.New, f)
	default:
		c.Unclear = append(c.Unclear, f)
	}
}

// baseOfTest returns what the base commit's run shows of test t.
func baseOfTest(base *Run, t Test) evidence {
	if e, ok := wholeRun(base); ok {
		return e
	}
	if bt, ok := base.Test(t.ID); ok {
		switch bt.Status {
		case Failed:
			return evidence{"failed", ""}
		case Skipped:
			return evidence{"not failed", "skipped on the base commit"}
		}
		return evidence{"not failed", "passed on the base commit"}
	}
	s, ok := base.Suite(t.Suite)
	switch {
	case ok && s.Error != "":
		return evidence{"unknown", fmt.Sprintf("its suite failed on the base commit (%s) before the test could run", s.Error)}
	case ok && s.Status == Passed:
		return evidence{"not failed", "its suite passed on the base commit"}
	case ok && s.Status == Skipped && base.Complete:
		return evidence{"not failed", "its suite ran no tests on the base commit"}
	case ok && s.Status == Failed && base.Complete:
		return evidence{"not failed", "did not fail on the base commit"}
	case !ok && base.Complete:
		return evidence{"not failed", "not in the base commit's run"}
	}
	return evidence{"unknown", incomplete(*base, "the base commit's")}
}

// baseOfSuite returns what the base commit's run shows of suite s, which
// failed as a whole on the change.
func baseOfSuite(base *Run, s Suite) evidence {
	if e, ok := wholeRun(base); ok {
		return e
	}
	bs, ok := base.Suite(s.Name)
	switch {
	case ok && bs.Error != "":
		return evidence{"failed", ""}
	case ok && (bs.Status == Passed || bs.Status == Failed || bs.Status == Skipped):
		return evidence{"not failed", "it ran on the base commit"}
	case !ok && base.Complete:
		return evidence{"not failed", "not in the base commit's run"}
	}
	return evidence{"unknown", incomplete(*base, "the base commit's")}
}

// wholeRun returns what the base commit's run says when the answer does
// not depend on the test: no baseline, a run that passed, a run without
// per-test results.
func wholeRun(base *Run) (evidence, bool) {
	switch {
	case base == nil:
		return evidence{"unknown", "no baseline was run"}, true
	case !base.Failed():
		return evidence{"not failed", "the base commit's run passed"}, true
	case len(base.Formats) == 0:
		return evidence{"unknown", "the base commit's output has no per-test results"}, true
	}
	return evidence{}, false
}

// incomplete says why run r, whose ("the base commit's"), may not show
// everything.
func incomplete(r Run, whose string) string {
	switch {
	case r.TimedOut:
		return whose + " run timed out"
	case r.Cut:
		return whose + " output was cut"
	}
	return whose + " run stopped before all its tests ran"
}

// fixed returns the base commit's failures the change's run shows passing.
func fixed(base, change Run) []Failure {
	var out []Failure
	passedWhole := !change.Failed()
	for _, t := range base.Failures() {
		why := ""
		ct, ok := change.Test(t.ID)
		s, sok := change.Suite(t.Suite)
		switch {
		case ok && ct.Status == Passed:
			why = "passed on the change"
		case ok:
		case passedWhole:
			why = "the change's run passed"
		case sok && s.Status == Passed:
			why = "its suite passed on the change"
		case sok && s.Error == "" && s.Status == Failed && change.Complete:
			why = "did not fail on the change"
		}
		if why != "" {
			out = append(out, Failure{ID: t.ID, Suite: t.Suite, Message: t.Message, Base: why})
		}
	}
	for _, s := range base.SuiteErrors() {
		cs, ok := change.Suite(s.Name)
		if passedWhole || ok && cs.Error == "" && (cs.Status == Passed || cs.Status == Failed) {
			out = append(out, Failure{ID: s.Name, Suite: s.Name, Error: s.Error, Message: s.Message, Base: "it ran on the change"})
		}
	}
	return out
}

// judge decides the outcome and says why.
func (c *Comparison) judge(base *Run, change Run) (Outcome, string) {
	if !change.Failed() {
		return Passes, "The tests pass on the change."
	}
	status := exitStatus(change)
	all := len(c.Preexisting) + len(c.New) + len(c.Unclear)
	switch {
	case len(c.New) > 0:
		return FailsNew, fmt.Sprintf("%s on the change %s not fail on the base commit: %s.", count(len(c.New), "failure"), doOrDoes(len(c.New)), labels(c.New))
	case all == 0 && base != nil && !base.Failed():
		return FailsNew, fmt.Sprintf("The test command passes on the base commit and %s on the change.", status)
	case all == 0 && len(change.Formats) == 0:
		return FailsUnclear, fmt.Sprintf("The test command %s on the change, and its output has no per-test results to compare with the base commit.", status)
	case all == 0:
		return FailsUnclear, fmt.Sprintf("The test command %s on the change, and its output shows no failing test.", status)
	case len(c.Unclear) > 0:
		return FailsUnclear, fmt.Sprintf("%s on the change cannot be compared with the base commit (%s): %s.", count(len(c.Unclear), "failure"), c.Unclear[0].Base, labels(c.Unclear))
	case !change.Complete:
		return FailsUnclear, fmt.Sprintf("Every failure shown also fails on the base commit, but %s, so others may be hidden.", incomplete(change, "the change's"))
	case !explained(base, change):
		return FailsUnclear, fmt.Sprintf("Every failing test also fails on the base commit, but the test command %s on the change and %s on the base commit, so something else may have failed.", status, exitStatus(*base))
	}
	return FailsPreexisting, fmt.Sprintf("Every failure on the change also fails on the base commit: %s.", labels(c.Preexisting))
}

// explained reports whether the change's failures explain its exit: the
// command runs one test tool and nothing else, or the base commit exited
// the same way.
func explained(base *Run, change Run) bool {
	cmds := simpleCommands(change.Command)
	if len(cmds) == 1 && toolOf(cmds[0]) != "" {
		return true
	}
	return base != nil && base.ExitCode == change.ExitCode && !base.TimedOut && !change.TimedOut
}

func exitStatus(r Run) string {
	switch {
	case r.TimedOut:
		return "timed out"
	case r.ExitCode == 0:
		return "exited 0 with failures in its output"
	}
	return fmt.Sprintf("failed with exit code %d", r.ExitCode)
}

// labels lists the first five failures' labels and how many more there are.
func labels(fs []Failure) string {
	var names []string
	for i, f := range fs {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(fs)-5))
			break
		}
		names = append(names, f.Label())
	}
	return strings.Join(names, ", ")
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func doOrDoes(n int) string {
	if n == 1 {
		return "does"
	}
	return "do"
}
