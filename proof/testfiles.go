package proof

import (
	"bytes"
	"path"
	"regexp"
	"strings"
)

// FileKind says whether a file holds tests.
type FileKind int

// The kinds of file Classify tells apart.
const (
	// CodeFile holds no tests (or its tests cannot be told from its path).
	CodeFile FileKind = iota
	// TestFile holds only tests, test helpers or test data: it can be
	// copied onto the base commit to run the change's tests on the code
	// without the fix.
	TestFile
	// MixedFile is source with tests inside: a Rust file with a
	// #[cfg(test)] module or #[test] functions. Its tests cannot run on the
	// base commit apart from the change's code.
	MixedFile
)

// testDirs are the directories whose files are all test files, in any
// language: Go's testdata, Python's and Rust's tests, JavaScript's
// __tests__ and its kin.
var testDirs = map[string]bool{
	"testdata": true, "tests": true, "test": true,
	"__tests__": true, "__mocks__": true, "__snapshots__": true, "__fixtures__": true,
}

// jsTestRE matches JavaScript and TypeScript test files: a.test.ts,
// a.spec.jsx, a.test.mjs.
var jsTestRE = regexp.MustCompile(`\.(?:test|spec)\.[cm]?[jt]sx?$`)

// javaTestSetRE matches the test source sets of Maven and Gradle:
// src/test/, src/integrationTest/, src/androidTest/.
var javaTestSetRE = regexp.MustCompile(`(?:^|/)src/(?:test|[a-z]\w*Test)/`)

// Classify says whether the file at path (relative to the repository, with
// forward slashes) holds tests, by its ecosystem's convention: Go *_test.go
// and testdata/; Python test_*.py, *_test.py, conftest.py and tests/;
// JavaScript and TypeScript *.test.*, *.spec.*, __tests__/ and test/;
// Rust tests/; Java and Kotlin src/test/; Ruby *_spec.rb, *_test.rb and
// spec/. A Rust source file elsewhere is a MixedFile when src, its
// contents, has a #[cfg(test)] module or a #[test] function; src may be
// nil for the other languages.
func Classify(p string, src []byte) FileKind {
	base := path.Base(p)
	dirs := strings.Split(path.Dir(p), "/")
	for _, d := range dirs {
		if testDirs[d] {
			return TestFile
		}
	}
	switch ext := path.Ext(base); {
	case strings.HasSuffix(base, "_test.go"):
		return TestFile
	case ext == ".py" && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "conftest.py"):
		return TestFile
	case jsTestRE.MatchString(base):
		return TestFile
	case javaTestSetRE.MatchString(p):
		return TestFile
	case ext == ".rb" && (strings.HasSuffix(base, "_spec.rb") || strings.HasSuffix(base, "_test.rb") || dirs[0] == "spec"):
		return TestFile
	case ext == ".rs" && (bytes.Contains(src, []byte("#[cfg(test)]")) || bytes.Contains(src, []byte("#[test]"))):
		return MixedFile
	}
	return CodeFile
}

// IsTestFile reports whether the file at path is a test file by its path
// alone (Classify with no contents).
func IsTestFile(p string) bool { return Classify(p, nil) == TestFile }

// TestFiles returns the paths of files that are test files.
func TestFiles(paths []string) []string {
	var out []string
	for _, p := range paths {
		if IsTestFile(p) {
			out = append(out, p)
		}
	}
	return out
}

// codeExt reports whether a file's extension is one of a language whose
// tests this package reads: a deleted test file of these holds tests; of
// others (fixtures, snapshots) it holds data.
func codeExt(p string) bool {
	switch path.Ext(p) {
	case ".go", ".py", ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts", ".rs", ".java", ".kt", ".groovy", ".scala", ".rb":
		return true
	}
	return false
}
