package proof

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// gitChange makes the change from before to after (path → contents; a path
// only in before is deleted, only in after added) with real git, and
// returns it as the guard reads it.
func gitChange(t *testing.T, before, after map[string]string) Change {
	t.Helper()
	dir := t.TempDir()
	g := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	g("init", "-q")
	tree(t, dir, before)
	g("add", "-A")
	g("commit", "-qm", "base", "--allow-empty")
	for p := range before {
		if _, ok := after[p]; !ok {
			if err := os.Remove(filepath.Join(dir, p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	tree(t, dir, after)
	g("add", "-A")
	c := Change{Diff: g("diff", "--cached", "-M"), Before: map[string][]byte{}, After: map[string][]byte{}}
	for p, s := range before {
		c.Before[p] = []byte(s)
	}
	for p, s := range after {
		c.After[p] = []byte(s)
	}
	return c
}

const goTestSrc = `package a

import "testing"

func TestA(t *testing.T) {
	if 1+1 != 2 {
		t.Fatal("math")
	}
}

func TestB(t *testing.T) {
	t.Log("b")
}
`

type flagWant struct {
	Kind FlagKind
	Path string
	Line int
	Test string
}

func flagWants(fs []Flag) []flagWant {
	var out []flagWant
	for _, f := range fs {
		out = append(out, flagWant{f.Kind, f.Path, f.Line, f.Test})
	}
	return out
}

type guardCase struct {
	name          string
	before, after map[string]string
	command       string
	diffOnly      bool // drop the contents: the guard reads the diff alone
	want          []flagWant
}

var guardCases = []guardCase{
	{name: "a deleted test file", before: map[string]string{"a/a_test.go": goTestSrc}, after: map[string]string{},
		want: []flagWant{{DeletedTestFile, "a/a_test.go", 0, ""}}},
	{name: "deleted test data is not a deleted test", before: map[string]string{"a/testdata/x.golden": "x\n"}, after: map[string]string{}},
	{name: "a test file renamed to a non-test file", before: map[string]string{"a/a_test.go": goTestSrc}, after: map[string]string{"a/a_test.go.bak": goTestSrc},
		want: []flagWant{{DeletedTestFile, "a/a_test.go", 0, ""}}},
	{name: "a deleted test function", before: map[string]string{"a/a_test.go": goTestSrc}, after: map[string]string{"a/a_test.go": strings.Split(goTestSrc, "\nfunc TestB")[0]},
		want: []flagWant{{DeletedTest, "a/a_test.go", 11, "TestB"}}},
	{name: "a deleted test function, diff only", before: map[string]string{"a/a_test.go": goTestSrc}, after: map[string]string{"a/a_test.go": strings.Split(goTestSrc, "\nfunc TestB")[0]}, diffOnly: true,
		want: []flagWant{{DeletedTest, "a/a_test.go", 11, "TestB"}}},
	{name: "an edit to an existing test's body", before: map[string]string{"a/a_test.go": goTestSrc}, after: map[string]string{"a/a_test.go": strings.Replace(goTestSrc, "1+1 != 2", "1+1 != 3", 1)},
		want: []flagWant{{EditedTest, "a/a_test.go", 5, "TestA"}}},
	{name: "a new test in an existing file is no edit", before: map[string]string{"a/a_test.go": goTestSrc}, after: map[string]string{"a/a_test.go": goTestSrc + "\nfunc TestC(t *testing.T) {}\n"}},
	{name: "an added t.Skip", before: map[string]string{"a/a_test.go": goTestSrc}, after: map[string]string{"a/a_test.go": strings.Replace(goTestSrc, "\tt.Log(\"b\")", "\tt.Skip(\"flaky\")\n\tt.Log(\"b\")", 1)},
		want: []flagWant{{EditedTest, "a/a_test.go", 11, "TestB"}, {AddedSkip, "a/a_test.go", 12, ""}}},
	{name: "t.Skip in a comment is no skip", before: map[string]string{"a/a_test.go": goTestSrc}, after: map[string]string{"a/a_test.go": goTestSrc + "\n// t.Skip(\"someday\")\n"}},
	{name: "a skip moved within its test", before: map[string]string{"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) {\n\tt.Skip(\"no\")\n\tt.Log(\"b\")\n}\n"},
		after: map[string]string{"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) {\n\tt.Log(\"b\")\n\tt.Skip(\"no\")\n}\n"},
		want:  []flagWant{{EditedTest, "a/a_test.go", 5, "TestB"}}},
	{name: "a build constraint added to a test file", before: map[string]string{"a/a_test.go": goTestSrc}, after: map[string]string{"a/a_test.go": "//go:build integration\n\n" + goTestSrc},
		want: []flagWant{{NarrowedTests, "a/a_test.go", 1, ""}}},
	{name: "t.Skip in code is no test skip", before: map[string]string{"a/scan.go": "package a\n"}, after: map[string]string{"a/scan.go": "package a\n\nfunc f(s *S) { s.Skip(1) }\n"}},

	{name: "pytest marks and calls", before: map[string]string{"tests/test_a.py": "def test_a():\n    assert 1\n\n\ndef test_b():\n    assert 2\n"},
		after: map[string]string{"tests/test_a.py": "import pytest\n\n\n@pytest.mark.skip(reason='later')\ndef test_a():\n    assert 1\n\n\n@pytest.mark.xfail\ndef test_b():\n    pytest.skip('no')\n    assert 2\n"},
		want:  []flagWant{{EditedTest, "tests/test_a.py", 4, "test_a"}, {AddedSkip, "tests/test_a.py", 4, ""}, {EditedTest, "tests/test_a.py", 9, "test_b"}, {AddedSkip, "tests/test_a.py", 9, ""}, {AddedSkip, "tests/test_a.py", 11, ""}}},
	{name: "pytest collection narrowed in conftest.py", before: map[string]string{"conftest.py": "\n"}, after: map[string]string{"conftest.py": "collect_ignore = ['tests/test_slow.py']\n"},
		want: []flagWant{{NarrowedTests, "conftest.py", 1, ""}}},
	{name: "JavaScript skips and .only", before: map[string]string{"src/a.test.js": "test('a', () => {});\n"},
		after: map[string]string{"src/a.test.js": "test.skip('a', () => {});\nxit('b', () => {});\ndescribe.skip('c', () => {});\nit.only('d', () => {});\n"},
		want:  []flagWant{{EditedTest, "src/a.test.js", 1, "a"}, {AddedSkip, "src/a.test.js", 1, ""}, {AddedSkip, "src/a.test.js", 2, ""}, {AddedSkip, "src/a.test.js", 3, ""}, {NarrowedTests, "src/a.test.js", 4, ""}}},
	{name: "Rust #[ignore] in a source file's tests", before: map[string]string{"src/lib.rs": "pub fn f() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n"},
		after: map[string]string{"src/lib.rs": "pub fn f() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    #[ignore]\n    fn t() {}\n}\n"},
		want:  []flagWant{{EditedTest, "src/lib.rs", 5, "tests::t"}, {AddedSkip, "src/lib.rs", 6, ""}}},
	{name: "Java @Disabled", before: map[string]string{"src/test/java/x/ATest.java": "class ATest {\n    @Test\n    void a() {}\n}\n"},
		after: map[string]string{"src/test/java/x/ATest.java": "class ATest {\n    @Disabled(\"slow\")\n    @Test\n    void a() {}\n}\n"},
		want:  []flagWant{{EditedTest, "src/test/java/x/ATest.java", 2, "a"}, {AddedSkip, "src/test/java/x/ATest.java", 2, ""}}},

	{name: "a CI workflow", before: map[string]string{".github/workflows/ci.yml": "on: push\njobs: {}\n"}, after: map[string]string{".github/workflows/ci.yml": "on: push\njobs: {}\n# quiet\n"},
		want: []flagWant{{CIConfig, ".github/workflows/ci.yml", 3, ""}}},
	{name: "lint configuration", before: map[string]string{".golangci.yml": "linters:\n  enable: [errcheck]\n"}, after: map[string]string{".golangci.yml": "linters:\n  enable: []\n", ".eslintrc.json": "{}\n"},
		want: []flagWant{{LintConfig, ".eslintrc.json", 1, ""}, {LintConfig, ".golangci.yml", 2, ""}}},
	{name: "coverage configuration", before: map[string]string{".coveragerc": "[report]\nfail_under = 90\n"}, after: map[string]string{".coveragerc": "[report]\nfail_under = 50\n", "codecov.yml": "coverage: {}\n"},
		want: []flagWant{{CoverageConfig, ".coveragerc", 2, ""}, {CoverageConfig, "codecov.yml", 1, ""}}},
	{name: "pyproject.toml sections", before: map[string]string{"pyproject.toml": "[project]\nname = \"x\"\ndependencies = []\n\n[tool.pytest.ini_options]\naddopts = \"-q\"\ntestpaths = [\"tests\"]\n\n[tool.ruff]\nline-length = 88\n"},
		after: map[string]string{"pyproject.toml": "[project]\nname = \"x\"\ndependencies = [\"requests\"]\n\n[tool.pytest.ini_options]\naddopts = \"-q -p no:warnings\"\ntestpaths = [\"tests/unit\"]\n\n[tool.ruff]\nline-length = 120\n"},
		want:  []flagWant{{TestConfig, "pyproject.toml", 6, ""}, {NarrowedTests, "pyproject.toml", 7, ""}, {LintConfig, "pyproject.toml", 10, ""}}},
	{name: "setup.cfg coverage threshold", before: map[string]string{"setup.cfg": "[metadata]\nname = x\n\n[coverage:report]\nfail_under = 90\n"}, after: map[string]string{"setup.cfg": "[metadata]\nname = x\n\n[coverage:report]\nfail_under = 10\n"},
		want: []flagWant{{CoverageConfig, "setup.cfg", 5, ""}}},
	{name: "tox.ini and pytest.ini", before: map[string]string{"tox.ini": "[tox]\nenvlist = py\n\n[pytest]\naddopts = -q\n", "pytest.ini": "[pytest]\naddopts = -q\n"},
		after: map[string]string{"tox.ini": "[tox]\nenvlist = py\n\n[pytest]\naddopts = -q --deselect tests/test_a.py::test_x\n", "pytest.ini": "[pytest]\naddopts = -q -x\n"},
		want:  []flagWant{{TestConfig, "pytest.ini", 2, ""}, {NarrowedTests, "tox.ini", 5, ""}}},
	{name: "Jest configuration", before: map[string]string{"jest.config.js": "module.exports = {\n  coverageThreshold: { global: { lines: 90 } },\n  testPathIgnorePatterns: [],\n};\n"},
		after: map[string]string{"jest.config.js": "module.exports = {\n  coverageThreshold: { global: { lines: 10 } },\n  testPathIgnorePatterns: ['slow'],\n};\n"},
		want:  []flagWant{{CoverageConfig, "jest.config.js", 2, ""}, {NarrowedTests, "jest.config.js", 3, ""}}},
	{name: "package.json", command: "npm run test:unit",
		before: map[string]string{"package.json": "{\n  \"name\": \"x\",\n  \"scripts\": {\n    \"build\": \"tsc\",\n    \"test:unit\": \"jest\"\n  },\n  \"jest\": {\n    \"coverageThreshold\": {\"global\": {\"lines\": 90}}\n  },\n  \"dependencies\": {\n    \"left-pad\": \"1.0.0\"\n  }\n}\n"},
		after:  map[string]string{"package.json": "{\n  \"name\": \"x\",\n  \"scripts\": {\n    \"build\": \"tsc -p .\",\n    \"test:unit\": \"jest src/a\"\n  },\n  \"jest\": {\n    \"coverageThreshold\": {\"global\": {\"lines\": 10}}\n  },\n  \"dependencies\": {\n    \"left-pad\": \"1.3.0\"\n  }\n}\n"},
		want:   []flagWant{{NarrowedTests, "package.json", 5, ""}, {CoverageConfig, "package.json", 8, ""}}},
	{name: "Makefile targets and variables", command: "make check",
		before: map[string]string{"Makefile": "GOFLAGS := -race\nTEST_FLAGS := -count=1\n\nbuild:\n\tgo build ./...\n\ncheck: build\n\tgo test $(TEST_FLAGS) ./...\n\nlint:\n\tgolangci-lint run\n"},
		after:  map[string]string{"Makefile": "GOFLAGS := -race\nTEST_FLAGS := -count=1 -short\n\nbuild:\n\tgo build -o bin/ ./...\n\ncheck: build\n\tgo test $(TEST_FLAGS) ./a/...\n\nlint:\n\tgolangci-lint run --fast\n"},
		want:   []flagWant{{NarrowedTests, "Makefile", 2, ""}, {NarrowedTests, "Makefile", 8, ""}, {LintConfig, "Makefile", 11, ""}}},
	{name: "a script the test command runs", command: "./scripts/test.sh -v",
		before: map[string]string{"scripts/test.sh": "#!/bin/sh\ngo test ./...\n"}, after: map[string]string{"scripts/test.sh": "#!/bin/sh\ngo test ./a\n"},
		want: []flagWant{{NarrowedTests, "scripts/test.sh", 2, ""}}},
	{name: "Cargo.toml test targets", before: map[string]string{"Cargo.toml": "[package]\nname = \"x\"\n\n[[test]]\nname = \"it\"\n"}, after: map[string]string{"Cargo.toml": "[package]\nname = \"x\"\nversion = \"0.2.0\"\n\n[[test]]\nname = \"it\"\nharness = false\n"},
		want: []flagWant{{NarrowedTests, "Cargo.toml", 7, ""}}},
	{name: "pom.xml", before: map[string]string{"pom.xml": "<project>\n  <properties>\n  </properties>\n</project>\n"},
		after: map[string]string{"pom.xml": "<project>\n  <properties>\n    <skipTests>true</skipTests>\n    <jacoco.minimum>0.1</jacoco.minimum>\n    <java.version>17</java.version>\n  </properties>\n</project>\n"},
		want:  []flagWant{{NarrowedTests, "pom.xml", 3, ""}, {CoverageConfig, "pom.xml", 4, ""}}},
	{name: "pyproject.toml, diff only, the section in the hunk's context", diffOnly: true,
		before: map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"-q\"\n"}, after: map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"-q --no-cov\"\n"},
		want: []flagWant{{TestConfig, "pyproject.toml", 2, ""}}},
	{name: "a plain code change", before: map[string]string{"a/a.go": "package a\n"}, after: map[string]string{"a/a.go": "package a\n\nfunc F() {}\n", "README.md": "hi\n"}},
}

// TestGuard checks the flags of every case, then keeps their reasons,
// which people read, in testdata/guard.golden.
func TestGuard(t *testing.T) {
	t.Parallel()
	got := make([][]Flag, len(guardCases))
	t.Run("cases", func(t *testing.T) {
		for i, tc := range guardCases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				c := gitChange(t, tc.before, tc.after)
				c.TestCommand = tc.command
				if tc.diffOnly {
					c.Before, c.After = nil, nil
				}
				flags, err := Guard(c)
				if err != nil {
					t.Fatal(err)
				}
				got[i] = flags
				if diff := cmp.Diff(tc.want, flagWants(flags)); diff != "" {
					t.Errorf("flags (-want +got):\n%s\ndiff:\n%s", diff, c.Diff)
				}
			})
		}
	})
	var b strings.Builder
	for i, tc := range guardCases {
		fmt.Fprintf(&b, "## %s\n", tc.name)
		for _, f := range got[i] {
			fmt.Fprintf(&b, "- [%s] %s\n", f.Kind, f)
		}
	}
	golden(t, "guard.golden", b.String())
}

func TestGuardBadDiff(t *testing.T) {
	t.Parallel()
	for _, d := range []string{
		"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n",
		"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n?a\n",
	} {
		if _, err := Guard(Change{Diff: d}); err == nil || !strings.Contains(err.Error(), "diff of x") {
			t.Errorf("Guard(%q) error = %v; want one naming the file", d, err)
		}
	}
}

func TestChangedTests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		before, after map[string]string
		diffOnly      bool
		want          []TestChange
	}{
		{"go", map[string]string{"a/a_test.go": goTestSrc},
			map[string]string{"a/a_test.go": strings.Replace(strings.Split(goTestSrc, "\nfunc TestB")[0], "1+1", "2+2", 1) + "\nfunc TestC(t *testing.T) {}\n"}, false,
			[]TestChange{{"a/a_test.go", "TestA", 5, 9, "edited"}, {"a/a_test.go", "TestC", 11, 11, "added"}, {"a/a_test.go", "TestB", 11, 13, "deleted"}}},
		{"go, diff only", map[string]string{"a/a_test.go": goTestSrc},
			map[string]string{"a/a_test.go": strings.Split(goTestSrc, "\nfunc TestB")[0] + "\nfunc TestC(t *testing.T) {}\n"}, true,
			[]TestChange{{"a/a_test.go", "TestC", 11, 0, "added"}, {"a/a_test.go", "TestB", 11, 0, "deleted"}}},
		{"a new Go test file", nil, map[string]string{"a/b_test.go": "package a\n\nimport \"testing\"\n\nfunc TestNew(t *testing.T) {}\n\nfunc helper() {}\n"}, false,
			[]TestChange{{"a/b_test.go", "TestNew", 5, 5, "added"}}},
		{"python classes and parameters", map[string]string{"tests/test_a.py": "class TestA:\n    def test_x(self):\n        assert 1\n"},
			map[string]string{"tests/test_a.py": "import pytest\n\n\nclass TestA:\n    def test_x(self):\n        assert 2\n\n\n@pytest.mark.parametrize('a', [1, 2])\ndef test_y(a):\n    assert a\n"}, false,
			[]TestChange{{"tests/test_a.py", "TestA::test_x", 5, 6, "edited"}, {"tests/test_a.py", "test_y", 9, 11, "added"}}},
		{"javascript describe blocks", map[string]string{"src/a.test.js": "describe('add', () => {\n  it('adds', () => {\n    expect(1).toBe(1);\n  });\n});\n"},
			map[string]string{"src/a.test.js": "describe('add', () => {\n  it('adds', () => {\n    expect(2).toBe(2);\n  });\n  it.each([[1, 2]])('adds %i and %i', (a, b) => {\n    expect(a + b).toBe(3);\n  });\n});\n"}, false,
			[]TestChange{{"src/a.test.js", "add › adds", 2, 4, "edited"}, {"src/a.test.js", "add › adds %i and %i", 5, 7, "added"}}},
		{"rust modules", map[string]string{"tests/it.rs": "#[test]\nfn a() {\n    assert!(true);\n}\n"},
			map[string]string{"tests/it.rs": "#[test]\nfn a() {\n    assert!(true);\n}\n\nmod more {\n    #[tokio::test]\n    async fn b() {\n        let s = \"}\";\n        assert_eq!(s, \"}\");\n    }\n}\n"}, false,
			[]TestChange{{"tests/it.rs", "more::b", 7, 11, "added"}}},
		{"kotlin", nil, map[string]string{"src/test/kotlin/x/ATest.kt": "class ATest {\n    @Test\n    fun `adds two numbers`() {\n        assertEquals(2, 1 + 1)\n    }\n}\n"}, false,
			[]TestChange{{"src/test/kotlin/x/ATest.kt", "adds two numbers", 2, 5, "added"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := gitChange(t, tc.before, tc.after)
			if tc.diffOnly {
				c.Before, c.After = nil, nil
			}
			got, err := ChangedTests(c)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ChangedTests (-want +got):\n%s\ndiff:\n%s", diff, c.Diff)
			}
		})
	}
}

func TestCommandNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		command, path string
		want          bool
	}{
		{"./scripts/test.sh -v", "scripts/test.sh", true},
		{"sh scripts/test.sh", "scripts/test.sh", true},
		{"CI=1 bash -e ./ci/test.bash", "ci/test.bash", true},
		{"python -m pytest -c setup.cfg", "setup.cfg", true},
		{"python run_tests.py --fast", "run_tests.py", true},
		{"make -f build/Makefile check", "build/Makefile", true},
		{"golangci-lint run --config=.golangci.yml && go test ./...", ".golangci.yml", true},
		{"sh -c './scripts/test.sh && echo done'", "scripts/test.sh", true},
		{"grep -q 'a + b' calc.go && echo calc ok", "calc.go", false},
		{"go test ./...", "main.go", false},
		{"python -m pytest tests/test_a.py", "tests/test_a.py", false},
		{"sh -c 'cat calc.go'", "calc.go", false},
		{"", "x.sh", false},
	} {
		if got := commandNames(tc.command, tc.path); got != tc.want {
			t.Errorf("commandNames(%q, %q) = %v, want %v", tc.command, tc.path, got, tc.want)
		}
	}
}
