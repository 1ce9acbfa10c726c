package proof

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// ProofInput is what Prove reads: the change's tests and two runs of them,
// both made with the same command (RunOnly's, or the whole test command
// when it cannot be narrowed).
type ProofInput struct {
	// Tests are the tests the change adds or edits (ChangedTests; deleted
	// ones are ignored). When empty, every test of Files the runs show is
	// a candidate.
	Tests []TestChange
	// Files are the change's test files: the Base run had them copied onto
	// the base commit.
	Files []string
	// Base is the run on the base commit's code with the change's test
	// files; Change the run on the change.
	Base, Change Run
}

// Regression is a test proven to guard the fix: it fails on the base
// commit's code and passes on the change.
type Regression struct {
	// Path and Name name the test as its file does.
	Path, Name string
	// ID is the Test.ID of the run's result that failed on the base (for a
	// parametrised test, the first failing case).
	ID string
	// BaseFailure holds the first lines of its failure on the base commit.
	BaseFailure string
	// BuildFailure is set when it failed on the base commit by not
	// building or not importing: it uses API the change adds or alters.
	BuildFailure bool
}

// Unproven is a test of the change that Prove could not prove, and why.
type Unproven struct {
	Path, Name string
	// Reason says why, in a few words: "passes on the base commit", "fails
	// on the change", "did not run on the change", "does not build on the
	// base commit for another reason: …".
	Reason string
	// BlockedBy is set when the test's result on the base commit was hidden
	// by another test file of the change that does not build there (Go
	// builds a package's test files together): run the proof again without
	// that file, and this test may be proven.
	BlockedBy string
}

// Proof is the regression proof of a change's tests.
type Proof struct {
	Proven   []Regression
	Unproven []Unproven
}

// Prove decides which of the change's tests are proven regression tests:
// each must pass on the change (every case of a parametrised test that ran;
// skipped cases do not count) and fail on the base commit's code.
//
// A test that does not build or import on the base commit counts as
// failing before when every error the compiler or the importer reports
// points into the change's test files and none is a missing dependency
// (Go's "no required module provides package", a missing go.sum entry,
// Rust's "can't find crate", a bare module that Node cannot find): the test
// then uses an API the change adds or alters, and a test calling a new
// function is the legitimate form of "fails before" in a compiled language
// (Go fails the package's build, Rust the crate's, javac the module's;
// pytest reports an ImportError when collecting the file). Errors pointing
// at other files, or at no file, mean the base commit does not build for
// another reason: not proven. The limit of this rule: a new helper outside
// the test files that the test needs looks the same as the fix; the proof
// then shows the compiler's words (BaseFailure), and a person sees which it
// was.
func Prove(in ProofInput) Proof {
	var p Proof
	cands := candidates(in)
	for _, tc := range cands {
		r, u := prove(in, tc, cands)
		if u.Reason != "" {
			u.Path, u.Name = tc.Path, tc.Name
			p.Unproven = append(p.Unproven, u)
			continue
		}
		p.Proven = append(p.Proven, r)
	}
	return p
}

// candidates returns the tests to prove: in.Tests without the deleted, or
// the top-level tests of in.Files that the change's run shows.
func candidates(in ProofInput) []TestChange {
	var out []TestChange
	for _, t := range in.Tests {
		if t.Kind != "deleted" {
			out = append(out, t)
		}
	}
	if len(in.Tests) > 0 {
		return out
	}
	seen := map[string]bool{}
	for _, t := range in.Change.Tests {
		for _, f := range in.Files {
			name := t.Name
			if lang(f) == "go" {
				name, _, _ = strings.Cut(name, "/")
			}
			if suiteHolds(t.Suite, f) && !seen[f+"\x00"+name] {
				seen[f+"\x00"+name] = true
				out = append(out, TestChange{Path: f, Name: name, Kind: "edited"})
			}
		}
	}
	return out
}

func prove(in ProofInput, tc TestChange, cands []TestChange) (Regression, Unproven) {
	no := func(why string) (Regression, Unproven) { return Regression{}, Unproven{Reason: why} }
	if len(in.Files) > 0 && !slices.Contains(in.Files, tc.Path) {
		// A test inside a source file (a Rust #[cfg(test)] module): the
		// base run has the base commit's version of it.
		return no("its file is not a test file, so it cannot run on the base commit without the fix")
	}
	cases := casesOf(in.Change, tc)
	if len(cases) == 0 {
		for _, s := range in.Change.SuiteErrors() {
			if suiteHolds(s.Name, tc.Path) || slices.Contains(s.Files, tc.Path) {
				return no(fmt.Sprintf("its suite failed on the change (%s)", s.Error))
			}
		}
		return no("did not run on the change")
	}
	var passed []Test
	for _, c := range cases {
		switch c.Status {
		case Failed:
			return no("fails on the change")
		case Passed:
			passed = append(passed, c)
		}
	}
	if len(passed) == 0 {
		return no("skipped on the change")
	}
	why := ""
	for _, c := range passed {
		bt, ok := in.Base.Test(c.ID)
		switch {
		case ok && bt.Status == Failed:
			msg := bt.Message
			if msg == "" {
				msg = subtestFailure(in.Base, bt)
			}
			return Regression{Path: tc.Path, Name: tc.Name, ID: c.ID, BaseFailure: msg}, Unproven{}
		case ok && bt.Status == Passed:
			why = "passes on the base commit"
		case ok:
			why = "skipped on the base commit"
		default:
			s, found := buildFailure(in.Base, c.Suite, tc.Path)
			if !found {
				if why == "" {
					why = "no result on the base commit"
				}
				continue
			}
			first, _, _ := strings.Cut(s.Message, "\n")
			if first == "" {
				first = s.Error
			}
			own, blockedBy, retry, foreign := buildBlame(s, tc, cands, in.Files)
			switch {
			case foreign:
				return no("does not build on the base commit for another reason: " + first)
			case !own:
				return Regression{}, Unproven{Reason: "did not build on the base commit because of " + blockedBy + ": " + first, BlockedBy: retry}
			}
			return Regression{Path: tc.Path, Name: tc.Name, ID: c.ID, BaseFailure: s.Message, BuildFailure: true}, Unproven{}
		}
	}
	return no(why)
}

// buildBlame reads where the errors of a suite that did not build on the
// base commit point. foreign: at a file that is not one of the change's
// test files, at no file, or at a missing dependency. own: at test tc
// itself: its body, or the top level of its file (imports, helpers). Else
// blockedBy names what they point at instead: another test of the change
// in the same file, or another test file (then retry names that file).
func buildBlame(s Suite, tc TestChange, cands []TestChange, testFiles []string) (own bool, blockedBy, retry string, foreign bool) {
	if len(s.Places) == 0 || dependencyRE.MatchString(s.Message) {
		return false, "", "", true
	}
	for _, pl := range s.Places {
		if !slices.ContainsFunc(testFiles, func(t string) bool { return samePath(pl.File, t) }) {
			return false, "", "", true
		}
	}
	for _, pl := range s.Places {
		if !samePath(pl.File, tc.Path) {
			if blockedBy == "" {
				blockedBy, retry = pl.File, pl.File
			}
			continue
		}
		if tc.End == 0 || pl.Line == 0 || tc.Line <= pl.Line && pl.Line <= tc.End {
			return true, "", "", false
		}
		other := ""
		for _, o := range cands {
			if o.Path == tc.Path && o.End > 0 && o.Line <= pl.Line && pl.Line <= o.End {
				other = o.Name
			}
		}
		if other == "" {
			return true, "", "", false // the file's top level: an import, a helper
		}
		if blockedBy == "" {
			blockedBy = "test " + other + " in the same file"
		}
	}
	return false, blockedBy, retry, false
}

// casesOf returns the run's results of test tc: its cases (a parametrised
// test's), not a Go test's subtests.
func casesOf(r Run, tc TestChange) []Test {
	var out []Test
	for _, t := range r.Tests {
		if suiteHolds(t.Suite, tc.Path) && nameMatches(t.Name, tc.Name, lang(tc.Path)) {
			out = append(out, t)
		}
	}
	return out
}

// subtestFailure returns "TestX/case: message" of the first failing
// subtest of a Go test that failed without a message of its own.
func subtestFailure(r Run, t Test) string {
	for _, s := range r.Tests {
		if s.Suite == t.Suite && strings.HasPrefix(s.Name, t.Name+"/") && s.Status == Failed && s.Message != "" {
			return s.Name + ": " + s.Message
		}
	}
	return ""
}

// buildFailure returns the base run's suite that failed as a whole where
// test file f's tests would have run: the test's own suite, or a suite
// whose errors point at f (cargo and Maven name the target, not the file).
func buildFailure(r Run, suite, f string) (Suite, bool) {
	if s, ok := r.Suite(suite); ok && s.Error != "" {
		return s, true
	}
	for _, s := range r.SuiteErrors() {
		if suiteHolds(s.Name, f) || slices.Contains(s.Files, f) {
			return s, true
		}
	}
	return Suite{}, false
}

// dependencyRE matches errors about a missing dependency rather than
// missing code: they do not prove a test.
var dependencyRE = regexp.MustCompile(`no required module provides package|missing go\.sum entry|cannot find module providing package|is not in std|cannot find package|can't find crate for|E0463|Cannot find module '[^./][^']*'|Cannot find package '`)

// samePath reports whether two relative paths name the same file, one
// possibly relative to a subdirectory of the other's root.
func samePath(a, b string) bool {
	return a == b || strings.HasSuffix(a, "/"+b) || strings.HasSuffix(b, "/"+a)
}

// suiteHolds reports whether suite (a Suite.Name) holds the tests of file
// f: a Go package is its directory, a Rust test binary its source file, a
// Java class its file, and a Python or JavaScript suite the file itself.
func suiteHolds(suite, f string) bool {
	switch lang(f) {
	case "go":
		dir := goPkgDir(f)
		return dir == "." || suite == dir || strings.HasSuffix(suite, "/"+dir)
	case "rust":
		src, _, _ := strings.Cut(suite, " (")
		return strings.HasSuffix(src, ".rs") && samePath(src, f)
	case "java":
		class, _, _ := strings.Cut(suite, "$")
		c := classOfFile(f)
		return class == c || strings.HasSuffix(class, "."+c) || path.Base(strings.ReplaceAll(class, ".", "/")) == c
	}
	return samePath(suite, f)
}

// placeholderRE matches the placeholders test.each and
// pytest-style titles fill in: %s, %d, %i, %p, %o, %j, %#, $name.
var placeholderRE = regexp.MustCompile(`%[sdifpojO#%]|\$[\w.]+`)

// nameMatches reports whether a run's test name is a case of the test a
// file names.
func nameMatches(run, file, lg string) bool {
	switch lg {
	case "python":
		base, _, _ := strings.Cut(run, "[")
		return base == file
	case "js":
		rs := splitJSName(run)
		fs := splitJSName(file)
		if len(rs) != len(fs) {
			return false
		}
		for i := range rs {
			if !titleMatches(rs[i], fs[i]) {
				return false
			}
		}
		return true
	case "rust":
		return run == file || strings.HasSuffix(run, "::"+file)
	case "java":
		base := run
		if i := strings.IndexAny(run, "({["); i >= 0 {
			base = run[:i]
		}
		return base == file
	}
	return run == file
}

func splitJSName(n string) []string {
	return strings.Split(strings.ReplaceAll(n, " > ", " › "), " › ")
}

// titleMatches reports whether a test's title is title, or fills in its
// placeholders.
func titleMatches(got, title string) bool {
	if got == title {
		return true
	}
	if !placeholderRE.MatchString(title) {
		return false
	}
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, loc := range placeholderRE.FindAllStringIndex(title, -1) {
		b.WriteString(regexp.QuoteMeta(title[last:loc[0]]))
		b.WriteString(".*")
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(title[last:]) + "$")
	re, err := regexp.Compile(b.String())
	return err == nil && re.MatchString(got)
}

// Retry returns what to prove again when test files of the change that do
// not build on the base commit hid other tests' results (BlockedBy): the
// change's test files without the blocking ones, and the blocked tests.
// Both are empty when there is nothing to retry. Run the narrowed command
// with them on both sides again, Prove, and Merge the result.
func (p Proof) Retry(files []string, tests []TestChange) ([]string, []TestChange) {
	blocking := map[string]bool{}
	blocked := map[string]bool{}
	for _, u := range p.Unproven {
		if u.BlockedBy != "" {
			blocking[u.BlockedBy] = true
			blocked[u.Path+"\x00"+u.Name] = true
		}
	}
	if len(blocked) == 0 {
		return nil, nil
	}
	var fs []string
	for _, f := range files {
		if !slices.ContainsFunc(keys(blocking), func(b string) bool { return samePath(b, f) }) {
			fs = append(fs, f)
		}
	}
	var ts []TestChange
	for _, t := range tests {
		if blocked[t.Path+"\x00"+t.Name] && slices.Contains(fs, t.Path) {
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return nil, nil
	}
	return fs, ts
}

// Merge returns p with the results of a retry in place of the tests it
// retried.
func (p Proof) Merge(retry Proof) Proof {
	redone := map[string]bool{}
	for _, r := range retry.Proven {
		redone[r.Path+"\x00"+r.Name] = true
	}
	for _, u := range retry.Unproven {
		redone[u.Path+"\x00"+u.Name] = true
	}
	out := Proof{Proven: append(append([]Regression(nil), p.Proven...), retry.Proven...)}
	for _, u := range p.Unproven {
		if !redone[u.Path+"\x00"+u.Name] {
			out.Unproven = append(out.Unproven, u)
		}
	}
	out.Unproven = append(out.Unproven, retry.Unproven...)
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
