package proof

import (
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path string
		src  string
		want FileKind
	}{
		{"calc/calc_test.go", "", TestFile},
		{"calc/calc.go", "", CodeFile},
		{"calc/testdata/golden.txt", "", TestFile},
		{"test_calc.py", "", TestFile},
		{"pkg/calc_test.py", "", TestFile},
		{"conftest.py", "", TestFile},
		{"tests/helpers.py", "", TestFile},
		{"pkg/testing.py", "", CodeFile},
		{"src/a.test.ts", "", TestFile},
		{"src/a.spec.jsx", "", TestFile},
		{"src/a.test.mjs", "", TestFile},
		{"src/__tests__/a.js", "", TestFile},
		{"src/__snapshots__/a.test.js.snap", "", TestFile},
		{"test/index.js", "", TestFile},
		{"src/contest.js", "", CodeFile},
		{"tests/integration.rs", "", TestFile},
		{"calc/tests/common/mod.rs", "", TestFile},
		{"src/lib.rs", "pub fn f() {}\n#[cfg(test)]\nmod tests {}\n", MixedFile},
		{"src/lib.rs", "pub fn f() {}\n", CodeFile},
		{"src/test/java/com/x/FooTest.java", "", TestFile},
		{"app/src/androidTest/java/X.kt", "", TestFile},
		{"src/main/java/com/x/Foo.java", "", CodeFile},
		{"spec/foo_spec.rb", "", TestFile},
		{"README.md", "", CodeFile},
	} {
		var src []byte
		if tc.src != "" {
			src = []byte(tc.src)
		}
		if got := Classify(tc.path, src); got != tc.want {
			t.Errorf("Classify(%q) = %v; want %v", tc.path, got, tc.want)
		}
	}
	if got := TestFiles([]string{"a.go", "a_test.go", "docs/x.md", "tests/t.py"}); len(got) != 2 || got[0] != "a_test.go" || got[1] != "tests/t.py" {
		t.Errorf("TestFiles = %v; want [a_test.go tests/t.py]", got)
	}
}

func TestIsReport(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"target/surefire-reports/TEST-com.x.FooTest.xml":     true,
		"core/target/failsafe-reports/TEST-com.x.FooIT.xml":  true,
		"app/build/test-results/test/TEST-com.x.FooTest.xml": true,
		"target/surefire-reports/com.x.FooTest.txt":          false,
		"target/surefire-reports/nested/TEST-com.x.Foo.xml":  false,
		"docs/TEST-plan.xml":                                 false,
		"build/test-results/test/binary/TEST-com.x.Foo.xml":  false,
	} {
		if got := IsReport(p); got != want {
			t.Errorf("IsReport(%q) = %v; want %v", p, got, want)
		}
	}
}

// TestParseBadReport: a report that is not JUnit XML is named in the
// warnings and makes the run incomplete; the good reports still count.
func TestParseBadReport(t *testing.T) {
	t.Parallel()
	reports := readReports(t, "surefire/junit4")
	reports["target/surefire-reports/TEST-com.example.Cut.xml"] = []byte("<testsuite name=\"com.example.Cut\"><testcase")
	r := Parse(Input{Command: "mvn test", ExitCode: 1, Reports: reports, Output: readFixture(t, "surefire/junit4/output.txt")})
	if r.Complete || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "TEST-com.example.Cut.xml is not JUnit XML") {
		t.Errorf("complete %v, warnings %q; want incomplete and one warning naming the report", r.Complete, r.Warnings)
	}
	if len(r.Failures()) != 2 {
		t.Errorf("failures = %v; want the two of the good reports", r.Failures())
	}
}
