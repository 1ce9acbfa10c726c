package proof

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
)

// FlagKind is what an integrity flag found.
type FlagKind string

// The kinds of integrity flag. All but EditedTest weaken what the tests
// prove, and make the pull request a draft unless the task asked for test
// changes (Decide).
const (
	DeletedTestFile FlagKind = "deleted-test-file"
	DeletedTest     FlagKind = "deleted-test"
	AddedSkip       FlagKind = "added-skip"
	CIConfig        FlagKind = "ci-config"
	LintConfig      FlagKind = "lint-config"
	CoverageConfig  FlagKind = "coverage-config"
	// TestConfig is a change to the test runner's configuration: pytest's
	// addopts, Jest's or Vitest's config, Surefire's in pom.xml.
	TestConfig FlagKind = "test-config"
	// NarrowedTests is a change that narrows what the test command runs:
	// its package.json script or Makefile target, a file it runs, build
	// tags added to a test file, testpaths, .only.
	NarrowedTests FlagKind = "narrowed-tests"
	// EditedTest is an edit to the body of a test that existed before. It
	// is named for the reviewer, and does not make a draft by itself.
	EditedTest FlagKind = "edited-test"
)

// Weakens reports whether a flag of kind k weakens what the tests prove.
func (k FlagKind) Weakens() bool { return k != EditedTest }

// Flag is one finding of the integrity guard.
type Flag struct {
	Kind FlagKind
	Path string
	// Line is the line in the file after the change, or, for what the
	// change removed (a deleted test, a removed line), before it; 0 for a
	// whole file.
	Line int
	// Test names the test, for DeletedTest and EditedTest.
	Test string
	// Reason says what was found in one line, for people.
	Reason string
}

// String formats the flag as "path:line: reason".
func (f Flag) String() string {
	if f.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", f.Path, f.Line, f.Reason)
	}
	return f.Path + ": " + f.Reason
}

// Change is what the integrity guard reads of a change.
type Change struct {
	// Diff is the change as a unified diff (git diff base..head).
	Diff string
	// Before and After hold the contents of the files the diff touches,
	// before the change by old path and after it by new path; a file
	// missing from them is read from the diff alone, which finds less
	// (edits to test bodies need the contents).
	Before, After map[string][]byte
	// TestCommand is the repository's test command; files and targets it
	// names are watched for narrowing.
	TestCommand string
}

// TestChange is a test the change adds, edits or deletes.
type TestChange struct {
	Path string
	// Name is the test as its file names it: TestX, test_x, Class::test_x,
	// "describe › it", mod::test_x, method.
	Name string
	// Line and End are its first and last lines after the change (before
	// it, for a deleted test); End is 0 when only the diff was read.
	Line, End int
	// Kind is "added", "edited" or "deleted".
	Kind string
}

// ChangedTests returns the tests the change adds, edits and deletes, read
// from the contents before and after of its test files and, where those
// are missing, from the diff's lines.
func ChangedTests(c Change) ([]TestChange, error) {
	files, err := parseDiff(c.Diff)
	if err != nil {
		return nil, fmt.Errorf("changed tests: %w", err)
	}
	var out []TestChange
	for _, f := range files {
		out = append(out, changedTests(f, c)...)
	}
	return out, nil
}

func changedTests(f fileDiff, c Change) []TestChange {
	p := f.path()
	if lang(p) == "" || Classify(p, c.After[f.newPath]) == CodeFile && Classify(f.oldPath, c.Before[f.oldPath]) == CodeFile {
		return nil
	}
	before, bok := c.Before[f.oldPath]
	after, aok := c.After[f.newPath]
	if f.added {
		before, bok = nil, true
	}
	if f.deleted {
		after, aok = nil, true
	}
	if !bok || !aok {
		return diffOnlyTests(f)
	}
	old := map[string]testFunc{}
	for _, tf := range testFuncs(f.oldPath, before) {
		old[tf.name] = tf
	}
	var out []TestChange
	seen := map[string]bool{}
	for _, tf := range testFuncs(f.newPath, after) {
		seen[tf.name] = true
		o, existed := old[tf.name]
		switch {
		case !existed:
			out = append(out, TestChange{Path: p, Name: tf.name, Line: tf.start, End: tf.end, Kind: "added"})
		case touches(f, o, tf):
			out = append(out, TestChange{Path: p, Name: tf.name, Line: tf.start, End: tf.end, Kind: "edited"})
		}
	}
	var gone []TestChange
	for name, tf := range old {
		if !seen[name] {
			gone = append(gone, TestChange{Path: f.oldPath, Name: name, Line: tf.start, End: tf.end, Kind: "deleted"})
		}
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].Line < gone[j].Line })
	return append(out, gone...)
}

// touches reports whether the diff changes a line of test o (before) or tf
// (after).
func touches(f fileDiff, o, tf testFunc) bool {
	for _, h := range f.hunks {
		for _, l := range h.lines {
			switch {
			case l.op == '-' && o.start <= l.oldLine && l.oldLine <= o.end:
				return true
			case l.op == '+' && tf.start <= l.newLine && l.newLine <= tf.end:
				return true
			}
		}
	}
	return false
}

// testStartRE matches the first line of a test in any language this
// package reads, its name in one of the groups.
var testStartRE = regexp.MustCompile(`^func ((?:Test|Fuzz|Example)\w*)\(|^\s*(?:async\s+)?def (test\w*)\s*\(|^\s*(?:pub\s+)?(?:async\s+)?fn (\w+)\s*\(`)

// diffOnlyTests finds added and deleted tests from the diff's lines alone:
// a test's first line removed and not added back is a deleted test, one
// added is a new test. Rust functions count only after a #[test] line.
func diffOnlyTests(f fileDiff) []TestChange {
	added, removed := map[string]int{}, map[string]int{}
	for _, h := range f.hunks {
		prevTest := false
		for _, l := range h.lines {
			m := testStartRE.FindStringSubmatch(l.text)
			name := ""
			if m != nil {
				name = m[1] + m[2]
				if m[3] != "" && prevTest {
					name = m[3]
				}
			}
			prevTest = rustTestAttrRE.MatchString(l.text) || prevTest && rustAttrRE.MatchString(l.text)
			if name == "" || lang(f.path()) == "go" && !isGoTestName(name) {
				continue
			}
			switch l.op {
			case '+':
				added[name] = l.newLine
			case '-':
				removed[name] = l.oldLine
			}
		}
	}
	var out []TestChange
	for name, line := range added {
		if _, ok := removed[name]; !ok {
			out = append(out, TestChange{Path: f.path(), Name: name, Line: line, Kind: "added"})
		}
	}
	for name, line := range removed {
		if _, ok := added[name]; !ok {
			out = append(out, TestChange{Path: f.oldPath, Name: name, Line: line, Kind: "deleted"})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Kind < out[j].Kind || out[i].Kind == out[j].Kind && out[i].Line < out[j].Line
	})
	return out
}

// Guard checks a change for what weakens its tests or its checks: deleted
// test files and tests, edits to the bodies of existing tests (named, not
// weakening), added skips, changes to CI, lint, coverage and test runner
// configuration, and changes that narrow what the test command runs. It
// returns the flags sorted by path and line, or an error when the diff
// cannot be read.
func Guard(c Change) ([]Flag, error) {
	files, err := parseDiff(c.Diff)
	if err != nil {
		return nil, fmt.Errorf("integrity guard: %w", err)
	}
	var flags []Flag
	for _, f := range files {
		flags = append(flags, fileFlags(f, c)...)
	}
	sort.SliceStable(flags, func(i, j int) bool {
		if flags[i].Path != flags[j].Path {
			return flags[i].Path < flags[j].Path
		}
		return flags[i].Line < flags[j].Line
	})
	return flags, nil
}

func fileFlags(f fileDiff, c Change) []Flag {
	var flags []Flag
	p := f.path()
	oldKind := Classify(f.oldPath, c.Before[f.oldPath])
	newKind := Classify(f.newPath, c.After[f.newPath])
	switch {
	case f.deleted && oldKind == TestFile && codeExt(f.oldPath):
		flags = append(flags, Flag{Kind: DeletedTestFile, Path: f.oldPath, Reason: "deletes a test file"})
	case !f.added && !f.deleted && f.oldPath != f.newPath && oldKind == TestFile && newKind == CodeFile && codeExt(f.oldPath):
		flags = append(flags, Flag{Kind: DeletedTestFile, Path: f.oldPath, Reason: fmt.Sprintf("renames a test file to %s, which is not a test file", f.newPath)})
	}
	if !f.deleted {
		for _, tc := range changedTests(f, c) {
			switch tc.Kind {
			case "deleted":
				flags = append(flags, Flag{Kind: DeletedTest, Path: tc.Path, Line: tc.Line, Test: tc.Name, Reason: "deletes test " + tc.Name})
			case "edited":
				flags = append(flags, Flag{Kind: EditedTest, Path: tc.Path, Line: tc.Line, Test: tc.Name, Reason: "edits the body of existing test " + tc.Name})
			}
		}
		if newKind != CodeFile {
			flags = append(flags, skipFlags(f)...)
		}
	}
	flags = append(flags, configFlags(f, c)...)
	if !f.deleted && len(f.hunks) > 0 && commandNames(c.TestCommand, p) {
		flags = append(flags, Flag{Kind: NarrowedTests, Path: p, Line: firstChange(f), Reason: "changes " + p + ", which the test command runs"})
	}
	return flags
}

// skipRule is a pattern that, on an added line of a test file, skips or
// narrows tests.
type skipRule struct {
	lang   string
	re     *regexp.Regexp
	kind   FlagKind
	reason string
}

var skipRules = []skipRule{
	{"go", regexp.MustCompile(`\.Skip(?:f|Now)?\(`), AddedSkip, "adds a skip"},
	{"go", regexp.MustCompile(`^//go:build |^// \+build `), NarrowedTests, "adds a build constraint to a test file: its tests run only with these tags"},
	{"python", regexp.MustCompile(`@pytest\.mark\.(?:skip|skipif|xfail)\b|\bpytest\.(?:skip|xfail|importorskip)\(|@unittest\.(?:skip|skipIf|skipUnless|expectedFailure)\b|\.skipTest\(|\bSkipTest\(`), AddedSkip, "adds a skip"},
	{"python", regexp.MustCompile(`\bcollect_ignore(?:_glob)?\b|\bdef pytest_(?:collection_modifyitems|ignore_collect)\b`), NarrowedTests, "changes which tests pytest collects"},
	{"js", regexp.MustCompile(`\b(?:it|test|describe|suite|context|specify)\.(?:skip|skipIf|todo|failing)\b|(?:^|[^\w.$])x(?:it|describe|test|specify|context)\s*\(`), AddedSkip, "adds a skip"},
	{"js", regexp.MustCompile(`\b(?:it|test|describe|suite|context|specify)\.only\b|(?:^|[^\w.$])f(?:it|describe)\s*\(`), NarrowedTests, "focuses tests with .only: the rest of the file does not run"},
	{"rust", regexp.MustCompile(`#\[ignore\b`), AddedSkip, "adds a skip"},
	{"rust", regexp.MustCompile(`^\s*#!\[cfg\(`), NarrowedTests, "adds a cfg condition to a whole test file"},
	{"java", regexp.MustCompile(`@(?:Disabled|Ignore)\w*\b|@DisabledIf\w*|@EnabledIf\w*|\bAssume(?:ptions)?\.assume\w*\(`), AddedSkip, "adds a skip"},
}

// skipFlags flags the skips a file's added lines bring, one per line; a
// line moved (removed and added back the same) brings none.
func skipFlags(f fileDiff) []Flag {
	lg := lang(f.path())
	removed := map[string]int{}
	for _, h := range f.hunks {
		for _, l := range h.lines {
			if l.op == '-' {
				removed[strings.TrimSpace(l.text)]++
			}
		}
	}
	var flags []Flag
	for _, h := range f.hunks {
		for _, l := range h.lines {
			if l.op != '+' {
				continue
			}
			code := stripComment(lg, l.text)
			for _, r := range skipRules {
				if r.lang != lg || !r.re.MatchString(code) {
					continue
				}
				if t := strings.TrimSpace(l.text); removed[t] > 0 {
					removed[t]--
					break
				}
				flags = append(flags, Flag{Kind: r.kind, Path: f.path(), Line: l.newLine, Reason: r.reason + ": " + codeSpan(l.text)})
				break
			}
		}
	}
	return flags
}

// stripComment removes a line comment from a line of code (roughly: not
// inside a string); Go build constraints are kept.
func stripComment(lg, l string) string {
	t := strings.TrimSpace(l)
	switch lg {
	case "python":
		if strings.HasPrefix(t, "#") {
			return ""
		}
		if i := strings.Index(l, " #"); i >= 0 && !strings.ContainsAny(l[i:], `"'`) {
			return l[:i]
		}
	case "go", "js", "rust", "java":
		if strings.HasPrefix(t, "//go:build ") || strings.HasPrefix(t, "// +build ") {
			return t
		}
		if strings.HasPrefix(t, "//") || strings.HasPrefix(t, "*") || strings.HasPrefix(t, "/*") {
			return ""
		}
		if i := strings.Index(l, " //"); i >= 0 && !strings.ContainsAny(l[i:], `"'`+"`") {
			return l[:i]
		}
	}
	return l
}

// codeSpan quotes a line of code for a reason: trimmed, cut to 80 bytes,
// in backticks.
func codeSpan(l string) string {
	return "`" + truncate(strings.ReplaceAll(strings.TrimSpace(l), "`", "'"), 80) + "`"
}

// firstChange returns the first line the diff adds (in the new file), or
// the first it removes (in the old one); 0 when it has none.
func firstChange(f fileDiff) int {
	for _, h := range f.hunks {
		for _, l := range h.lines {
			switch l.op {
			case '+':
				return l.newLine
			case '-':
				return l.oldLine
			}
		}
	}
	return 0
}

// commandNames reports whether the test command runs file p or reads it
// as its configuration: p is a command's program (./scripts/test.sh), the
// script an interpreter runs (sh scripts/test.sh, python run_tests.py), a
// file given with -f, -c, --config or --file, or named so inside sh -c.
// A file the command only reads as data (grep -q x calc.go) is not named.
func commandNames(command, p string) bool {
	if command == "" {
		return false
	}
	for _, args := range simpleCommands(command) {
		for _, f := range commandFiles(args) {
			if path.Clean(strings.TrimPrefix(f, "./")) == p {
				return true
			}
		}
		if len(args) > 2 && shells[path.Base(args[0])] && args[1] == "-c" && commandNames(args[2], p) {
			return true
		}
	}
	return false
}

// shells run a command line given with -c; interpreters run the script
// named by their first argument that is not a flag.
var (
	shells       = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true}
	interpreters = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true,
		"python": true, "python3": true, "node": true, "ruby": true, "perl": true, "php": true, "tsx": true, "ts-node": true, "deno": true, "bun": true}
)

// commandFiles returns the words of one simple command that name a file it
// runs or reads as configuration.
func commandFiles(args []string) []string {
	for len(args) > 0 && strings.Contains(args[0], "=") && !strings.HasPrefix(args[0], "-") {
		args = args[1:] // VAR=value before the program
	}
	if len(args) == 0 {
		return nil
	}
	var out []string
	if strings.Contains(args[0], "/") {
		out = append(out, args[0])
	}
	interp := interpreters[path.Base(args[0])]
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c" && shells[path.Base(args[0])]:
			return out // the rest is a command line, read by the caller
		case a == "-f" || a == "-c" || a == "--config" || a == "--file" || a == "--rcfile":
			if i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
		case strings.HasPrefix(a, "--config=") || strings.HasPrefix(a, "--file=") || strings.HasPrefix(a, "-c="):
			out = append(out, a[strings.IndexByte(a, '=')+1:])
		case interp && !strings.HasPrefix(a, "-"):
			out = append(out, a)
			interp = false
		}
	}
	return out
}
