package proof

import (
	"slices"
	"sort"
	"strconv"
)

// Status is the outcome of one test or suite.
type Status string

// The statuses a test or suite ends with. An expected failure (pytest's
// xfail) counts as skipped: it neither passed nor failed.
const (
	Passed  Status = "passed"
	Failed  Status = "failed"
	Skipped Status = "skipped"
)

// Format names the test tool whose output a parser read.
type Format string

// The formats Parse reads.
const (
	GoTest   Format = "go test"
	Pytest   Format = "pytest"
	Jest     Format = "jest"
	Vitest   Format = "vitest"
	Cargo    Format = "cargo test"
	Surefire Format = "surefire"
)

// Test is the result of one test in one run.
type Test struct {
	// ID names the test uniquely within a run, in its tool's own form:
	// "example.com/m/calc TestAdd/small" (go test), "tests/test_a.py::
	// TestC::test_b[1-2]" (pytest), "src/a.test.js › add › works" (Jest),
	// "src/a.test.js > add > works" (Vitest), "src/lib.rs (calc)
	// tests::adds" (cargo test), "com.example.CalcTest#adds" (Surefire).
	// Runs of the same command on two commits name a test the same way.
	ID string
	// Suite is the Suite.Name the test belongs to.
	Suite string
	// Name is the test's name within its suite: "TestAdd/small",
	// "TestC::test_b[1-2]", "add › works", "tests::adds", "adds".
	Name   string
	Status Status
	// Message holds the first lines of a failure's output (at most
	// MessageLines); empty for a test that did not fail.
	Message string
}

// Suite is a group of tests the tool reports together: a Go package, a
// Python or JavaScript test file, a Rust test binary, a Java test class.
type Suite struct {
	// Name is the package's import path, the file's path relative to the
	// directory the command ran in, "src/lib.rs (calc)" or "doc-tests
	// (calc)" for a Rust test binary, the class's name.
	Name string
	// Status is Passed when the suite ran to its end and no test in it
	// failed, Failed when a test in it or the suite itself failed, Skipped
	// when it had no tests to run, and empty when the output does not say
	// how it ended (it was cut).
	Status Status
	// Error says how the suite failed as a whole, without a failing test
	// to blame: "build failed", "setup failed", "collection error",
	// "failed to run", or "exited" (the test binary ended before its tests
	// did). Empty otherwise.
	Error string
	// Message holds the first lines of the suite's own failure output: the
	// compiler's errors, the import error, the panic.
	Message string
	// Files lists the source files, relative to the directory the command
	// ran in, that the suite's build or collection errors point at;
	// Places the positions, in the order the errors name them.
	Files  []string
	Places []Place
}

// Place is a position in a source file an error points at; Line is 0 when
// the error names only the file.
type Place struct {
	File string
	Line int
}

// addPlace records that s's errors point at line of file f, a path as the
// tool printed it: made relative to dir, left out when outside it.
func (s *Suite) addPlace(dir, f string, line int) {
	rel, ok := relPath(dir, f)
	if !ok {
		return
	}
	s.Places = append(s.Places, Place{rel, line})
	if !slices.Contains(s.Files, rel) {
		s.Files = append(s.Files, rel)
	}
}

// Run is what one run of a test command showed.
type Run struct {
	Command  string
	ExitCode int
	TimedOut bool
	// Formats lists the tools whose output was read; empty when no parser
	// applied, and then Tests and Suites are empty and only ExitCode,
	// TimedOut and Tail say how the run went.
	Formats []Format
	// Tests holds the per-test results the output showed, sorted by ID. A
	// tool that lists only failures (go test without -v, Jest without
	// --verbose) leaves the passing tests of a passing suite out: their
	// suite's Passed status stands for them.
	Tests  []Test
	Suites []Suite
	// Complete reports whether the results account for everything the
	// command ran: the output was read to the tool's closing lines, was not
	// cut and the command did not time out or stop early. A run that is not
	// complete may have failures its results do not show.
	Complete bool
	// Cut reports whether the output was cut in the middle (a head+tail
	// cap's elision line).
	Cut bool
	// Tail holds the last TailLines lines of the output.
	Tail string
	// Warnings says what could not be read: a report that is not JUnit XML.
	Warnings []string
}

// Failed reports whether the run failed: a non-zero exit, a time-out, or a
// failure in its results (a command that hides its exit status, such as
// `go test ./... | tail`, still fails when its output shows a failure).
func (r Run) Failed() bool {
	return r.TimedOut || r.ExitCode != 0 || len(r.Failures()) > 0 || len(r.SuiteErrors()) > 0
}

// Failures returns the tests that failed.
func (r Run) Failures() []Test {
	var out []Test
	for _, t := range r.Tests {
		if t.Status == Failed {
			out = append(out, t)
		}
	}
	return out
}

// SuiteErrors returns the suites that failed as a whole (Suite.Error set).
func (r Run) SuiteErrors() []Suite {
	var out []Suite
	for _, s := range r.Suites {
		if s.Error != "" {
			out = append(out, s)
		}
	}
	return out
}

// Test returns the result for the test with id, if the run showed one.
func (r Run) Test(id string) (Test, bool) {
	i := sort.Search(len(r.Tests), func(i int) bool { return r.Tests[i].ID >= id })
	if i < len(r.Tests) && r.Tests[i].ID == id {
		return r.Tests[i], true
	}
	return Test{}, false
}

// Suite returns the suite named name, if the run showed it.
func (r Run) Suite(name string) (Suite, bool) {
	for _, s := range r.Suites {
		if s.Name == name {
			return s, true
		}
	}
	return Suite{}, false
}

// results collects what one parser read.
type results struct {
	tests    []Test
	suites   []Suite
	complete bool
	found    bool // the output had this tool's marks
}

// collector keeps tests and suites in the order first seen, by key.
type collector struct {
	tests  map[string]*Test
	torder []string
	suites map[string]*Suite
	sorder []string
}

func newCollector() *collector {
	return &collector{tests: map[string]*Test{}, suites: map[string]*Suite{}}
}

// test returns the test with id, adding it (suite and name set) if new.
func (c *collector) test(id, suite, name string) *Test {
	if t, ok := c.tests[id]; ok {
		return t
	}
	t := &Test{ID: id, Suite: suite, Name: name}
	c.tests[id] = t
	c.torder = append(c.torder, id)
	return t
}

// suite returns the suite named name, adding it if new.
func (c *collector) suite(name string) *Suite {
	if s, ok := c.suites[name]; ok {
		return s
	}
	s := &Suite{Name: name}
	c.suites[name] = s
	c.sorder = append(c.sorder, name)
	return s
}

// results returns the tests that have a status and all suites; a suite
// with a failed test or an error is failed.
func (c *collector) results() ([]Test, []Suite) {
	var ts []Test
	failed := map[string]bool{}
	for _, id := range c.torder {
		t := c.tests[id]
		if t.Status == "" {
			continue
		}
		if t.Status == Failed {
			failed[t.Suite] = true
		}
		ts = append(ts, *t)
	}
	var ss []Suite
	for _, name := range c.sorder {
		s := c.suites[name]
		if failed[name] || s.Error != "" {
			s.Status = Failed
		}
		ss = append(ss, *s)
	}
	return ts, ss
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
