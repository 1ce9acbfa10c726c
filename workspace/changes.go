package workspace

import (
	"path"
	"slices"
	"strings"
)

// WorkflowDir holds GitHub Actions workflows; changes there run with the
// repository's secrets and need the App's workflows permission.
const WorkflowDir = ".github/workflows/"

// Changes summarizes a change against the base commit, as the harness
// checks it before a submission. Paths are slash-separated, relative to the
// repository root and sorted.
type Changes struct {
	// Files are all changed paths: added, modified, deleted.
	Files []string
	// New are files that do not exist in the base commit (untracked files
	// the agent created count here).
	New []string
	// Deleted are files of the base commit that are gone.
	Deleted []string
	// Tests are changed paths that look like test files (IsTestFile).
	Tests []string
	// Workflows are changed paths under .github/workflows/, and every
	// symbolic link the change adds or modifies at or under .github/ (a
	// link at .github or .github/workflows would hide the workflows it
	// points to from this list).
	Workflows []string
	// Symlinks are the symbolic links the change adds or modifies that sit
	// at or under .github/ or whose target leaves the repository; see
	// Symlink. Sorted by path.
	Symlinks []Symlink
	// NestedRepos are directories with their own .git; they are left out
	// of the diff and the commit.
	NestedRepos []string
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool { return len(c.Files) == 0 }

// add records one name-status entry (git sorts them by path).
func (c *Changes) add(status, p string) {
	c.Files = append(c.Files, p)
	switch status {
	case "A":
		c.New = append(c.New, p)
	case "D":
		c.Deleted = append(c.Deleted, p)
	}
	if IsTestFile(p) {
		c.Tests = append(c.Tests, p)
	}
	if strings.HasPrefix(p, WorkflowDir) {
		c.Workflows = append(c.Workflows, p)
	}
}

// addSymlink records a link classifySymlink reported (in path order).
func (c *Changes) addSymlink(s Symlink) {
	c.Symlinks = append(c.Symlinks, s)
	if s.UnderGitHub && !slices.Contains(c.Workflows, s.Path) {
		c.Workflows = append(c.Workflows, s.Path)
		slices.Sort(c.Workflows)
	}
}

// testDirs are directory names whose files are tests or test data.
var testDirs = map[string]bool{
	"test": true, "tests": true, "__tests__": true, "spec": true, "specs": true,
	"testdata": true, "testing": true, "e2e": true,
}

// IsTestFile reports whether the slash-separated path p looks like a test
// file in a common ecosystem: Go's _test.go, Python's test_*.py, *_test.py
// and conftest.py, JavaScript and TypeScript *.test.* and *.spec.*, Ruby's
// *_spec.rb and *_test.rb, JVM and .NET *Test(s) classes, or anything under
// a test, tests, __tests__, spec, testdata or e2e directory.
func IsTestFile(p string) bool {
	dirs := strings.Split(path.Dir(p), "/")
	for _, d := range dirs {
		if testDirs[strings.ToLower(d)] {
			return true
		}
	}
	base := path.Base(p)
	ext := path.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	switch ext {
	case ".go":
		return strings.HasSuffix(stem, "_test")
	case ".py":
		return strings.HasPrefix(stem, "test_") || strings.HasSuffix(stem, "_test") || stem == "conftest"
	case ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts":
		return strings.HasSuffix(stem, ".test") || strings.HasSuffix(stem, ".spec")
	case ".rb":
		return strings.HasSuffix(stem, "_spec") || strings.HasSuffix(stem, "_test")
	case ".java", ".kt", ".scala", ".cs":
		return strings.HasSuffix(stem, "Test") || strings.HasSuffix(stem, "Tests") || strings.HasSuffix(stem, "IT")
	case ".rs", ".c", ".cc", ".cpp", ".h", ".hpp", ".php", ".swift", ".ex", ".exs":
		return strings.HasSuffix(stem, "_test") || strings.HasSuffix(stem, "Test") || strings.HasPrefix(stem, "test_")
	}
	return false
}
