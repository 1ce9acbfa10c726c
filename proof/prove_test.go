package proof

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProve(t *testing.T) {
	t.Parallel()
	const pkg = "example.com/m/num"
	goFail := func(name, msg string) Test {
		return Test{ID: pkg + " " + name, Suite: pkg, Name: name, Status: Failed, Message: msg}
	}
	goPass := func(name string) Test { return Test{ID: pkg + " " + name, Suite: pkg, Name: name, Status: Passed} }
	runOf := func(suites []Suite, tests ...Test) Run {
		return *mkRun("go test -json ./num", 1, true, suites, tests...)
	}
	abs := TestChange{Path: "num/abs_test.go", Name: "TestAbsNegative", Line: 10, End: 14, Kind: "added"}
	files := []string{"num/abs_test.go"}
	buildErr := func(places ...Place) Suite {
		s := Suite{Name: pkg, Status: Failed, Error: "build failed", Message: "num/abs_test.go:12:9: undefined: Abs2"}
		for _, p := range places {
			s.addPlace("", p.File, p.Line)
		}
		return s
	}
	type want struct {
		proven   []Regression
		unproven []Unproven
	}
	for _, tc := range []struct {
		name string
		in   ProofInput
		want want
	}{
		{"fails on base, passes on the change", ProofInput{Tests: []TestChange{abs}, Files: files,
			Base: runOf(nil, goFail("TestAbsNegative", "Abs(-2) = -2")), Change: runOf(nil, goPass("TestAbsNegative"))},
			want{proven: []Regression{{Path: abs.Path, Name: abs.Name, ID: pkg + " TestAbsNegative", BaseFailure: "Abs(-2) = -2"}}}},
		{"passes on base", ProofInput{Tests: []TestChange{abs}, Files: files,
			Base: runOf(nil, goPass("TestAbsNegative")), Change: runOf(nil, goPass("TestAbsNegative"))},
			want{unproven: []Unproven{{Path: abs.Path, Name: abs.Name, Reason: "passes on the base commit"}}}},
		{"fails on the change", ProofInput{Tests: []TestChange{abs}, Files: files,
			Base: runOf(nil, goFail("TestAbsNegative", "x")), Change: runOf(nil, goFail("TestAbsNegative", "x"))},
			want{unproven: []Unproven{{Path: abs.Path, Name: abs.Name, Reason: "fails on the change"}}}},
		{"skipped on the change", ProofInput{Tests: []TestChange{abs}, Files: files,
			Base: runOf(nil, goFail("TestAbsNegative", "x")), Change: runOf(nil, Test{ID: pkg + " TestAbsNegative", Suite: pkg, Name: "TestAbsNegative", Status: Skipped})},
			want{unproven: []Unproven{{Path: abs.Path, Name: abs.Name, Reason: "skipped on the change"}}}},
		{"did not run on the change", ProofInput{Tests: []TestChange{abs}, Files: files,
			Base: runOf(nil, goFail("TestAbsNegative", "x")), Change: runOf(nil, goPass("TestOther"))},
			want{unproven: []Unproven{{Path: abs.Path, Name: abs.Name, Reason: "did not run on the change"}}}},
		{"its suite does not build on the change", ProofInput{Tests: []TestChange{abs}, Files: files,
			Base: runOf(nil), Change: runOf([]Suite{buildErr(Place{"num/abs_test.go", 12})})},
			want{unproven: []Unproven{{Path: abs.Path, Name: abs.Name, Reason: "its suite failed on the change (build failed)"}}}},
		{"no result on base", ProofInput{Tests: []TestChange{abs}, Files: files,
			Base: runOf(nil), Change: runOf(nil, goPass("TestAbsNegative"))},
			want{unproven: []Unproven{{Path: abs.Path, Name: abs.Name, Reason: "no result on the base commit"}}}},
		{"does not build on base in its own body: proven", ProofInput{Tests: []TestChange{abs}, Files: files,
			Base: runOf([]Suite{buildErr(Place{"num/abs_test.go", 12})}), Change: runOf(nil, goPass("TestAbsNegative"))},
			want{proven: []Regression{{Path: abs.Path, Name: abs.Name, ID: pkg + " TestAbsNegative", BaseFailure: "num/abs_test.go:12:9: undefined: Abs2", BuildFailure: true}}}},
		{"does not build on base at its file's top level: proven", ProofInput{Tests: []TestChange{abs}, Files: files,
			Base: runOf([]Suite{buildErr(Place{"num/abs_test.go", 3})}), Change: runOf(nil, goPass("TestAbsNegative"))},
			want{proven: []Regression{{Path: abs.Path, Name: abs.Name, ID: pkg + " TestAbsNegative", BaseFailure: "num/abs_test.go:12:9: undefined: Abs2", BuildFailure: true}}}},
		{"does not build on base because of code outside the test files", ProofInput{Tests: []TestChange{abs}, Files: files,
			Base: runOf([]Suite{buildErr(Place{"num/abs.go", 4}, Place{"num/abs_test.go", 12})}), Change: runOf(nil, goPass("TestAbsNegative"))},
			want{unproven: []Unproven{{Path: abs.Path, Name: abs.Name, Reason: "does not build on the base commit for another reason: num/abs_test.go:12:9: undefined: Abs2"}}}},
		{"does not build on base for a missing dependency", ProofInput{Tests: []TestChange{abs}, Files: files,
			Base:   runOf([]Suite{{Name: pkg, Status: Failed, Error: "setup failed", Message: "num/abs_test.go:5:2: no required module provides package golang.org/x/exp/slices", Places: []Place{{"num/abs_test.go", 5}}, Files: []string{"num/abs_test.go"}}}),
			Change: runOf(nil, goPass("TestAbsNegative"))},
			want{unproven: []Unproven{{Path: abs.Path, Name: abs.Name, Reason: "does not build on the base commit for another reason: num/abs_test.go:5:2: no required module provides package golang.org/x/exp/slices"}}}},
		{"does not build on base, errors with no place", ProofInput{Tests: []TestChange{abs}, Files: files,
			Base: runOf([]Suite{{Name: pkg, Status: Failed, Error: "build failed", Message: "go: cannot find main module"}}), Change: runOf(nil, goPass("TestAbsNegative"))},
			want{unproven: []Unproven{{Path: abs.Path, Name: abs.Name, Reason: "does not build on the base commit for another reason: go: cannot find main module"}}}},
		{"blocked by another test file of the package", ProofInput{Tests: []TestChange{abs, {Path: "num/clamp_test.go", Name: "TestClamp", Line: 5, End: 9, Kind: "added"}}, Files: []string{"num/abs_test.go", "num/clamp_test.go"},
			Base:   runOf([]Suite{{Name: pkg, Status: Failed, Error: "build failed", Message: "num/clamp_test.go:6:5: undefined: Clamp", Places: []Place{{"num/clamp_test.go", 6}}, Files: []string{"num/clamp_test.go"}}}),
			Change: runOf(nil, goPass("TestAbsNegative"), goPass("TestClamp"))},
			want{
				proven:   []Regression{{Path: "num/clamp_test.go", Name: "TestClamp", ID: pkg + " TestClamp", BaseFailure: "num/clamp_test.go:6:5: undefined: Clamp", BuildFailure: true}},
				unproven: []Unproven{{Path: abs.Path, Name: abs.Name, Reason: "did not build on the base commit because of num/clamp_test.go: num/clamp_test.go:6:5: undefined: Clamp", BlockedBy: "num/clamp_test.go"}},
			}},
		{"blocked by another test in the same file", ProofInput{Tests: []TestChange{abs, {Path: "num/abs_test.go", Name: "TestAbsNew", Line: 16, End: 20, Kind: "added"}}, Files: files,
			Base:   runOf([]Suite{buildErr(Place{"num/abs_test.go", 18})}),
			Change: runOf(nil, goPass("TestAbsNegative"), goPass("TestAbsNew"))},
			want{
				proven:   []Regression{{Path: abs.Path, Name: "TestAbsNew", ID: pkg + " TestAbsNew", BaseFailure: "num/abs_test.go:12:9: undefined: Abs2", BuildFailure: true}},
				unproven: []Unproven{{Path: abs.Path, Name: abs.Name, Reason: "did not build on the base commit because of test TestAbsNew in the same file: num/abs_test.go:12:9: undefined: Abs2"}},
			}},
		{"a Go test failing by its subtests", ProofInput{Tests: []TestChange{abs}, Files: files,
			Base:   runOf(nil, goFail("TestAbsNegative", ""), goFail("TestAbsNegative/minus_two", "got -2")),
			Change: runOf(nil, goPass("TestAbsNegative"), goPass("TestAbsNegative/minus_two"))},
			want{proven: []Regression{{Path: abs.Path, Name: abs.Name, ID: pkg + " TestAbsNegative", BaseFailure: "TestAbsNegative/minus_two: got -2"}}}},
		{"a test inside a source file", ProofInput{Tests: []TestChange{{Path: "src/lib.rs", Name: "tests::abs", Kind: "edited"}}, Files: []string{"tests/it.rs"},
			Base:   *mkRun("cargo test", 101, true, nil, Test{ID: "src/lib.rs (x) tests::abs", Suite: "src/lib.rs (x)", Name: "tests::abs", Status: Failed}),
			Change: *mkRun("cargo test", 0, true, nil, Test{ID: "src/lib.rs (x) tests::abs", Suite: "src/lib.rs (x)", Name: "tests::abs", Status: Passed})},
			want{unproven: []Unproven{{Path: "src/lib.rs", Name: "tests::abs", Reason: "its file is not a test file, so it cannot run on the base commit without the fix"}}}},
		{"the deleted are not candidates", ProofInput{Tests: []TestChange{{Path: "num/abs_test.go", Name: "TestGone", Kind: "deleted"}}, Files: files,
			Base: runOf(nil), Change: runOf(nil)}, want{}},
		{"without names, every test of the files the runs show", ProofInput{Files: files,
			Base:   runOf(nil, goFail("TestAbsNegative", "x"), goPass("TestAbsPositive")),
			Change: runOf(nil, goPass("TestAbsNegative"), goPass("TestAbsPositive"))},
			want{proven: []Regression{{Path: abs.Path, Name: abs.Name, ID: pkg + " TestAbsNegative", BaseFailure: "x"}},
				unproven: []Unproven{{Path: abs.Path, Name: "TestAbsPositive", Reason: "passes on the base commit"}}}},
		{"pytest: one case of a parametrised test fails on base", ProofInput{Tests: []TestChange{{Path: "tests/test_calc.py", Name: "test_sub", Line: 9, End: 11, Kind: "added"}}, Files: []string{"tests/test_calc.py"},
			Base: *mkRun("pytest", 1, true, nil,
				Test{ID: "tests/test_calc.py::test_sub[1-1-0]", Suite: "tests/test_calc.py", Name: "test_sub[1-1-0]", Status: Passed},
				Test{ID: "tests/test_calc.py::test_sub[3-1-2]", Suite: "tests/test_calc.py", Name: "test_sub[3-1-2]", Status: Failed, Message: "assert -2 == 2"}),
			Change: *mkRun("pytest", 0, true, nil,
				Test{ID: "tests/test_calc.py::test_sub[1-1-0]", Suite: "tests/test_calc.py", Name: "test_sub[1-1-0]", Status: Passed},
				Test{ID: "tests/test_calc.py::test_sub[3-1-2]", Suite: "tests/test_calc.py", Name: "test_sub[3-1-2]", Status: Passed})},
			want{proven: []Regression{{Path: "tests/test_calc.py", Name: "test_sub", ID: "tests/test_calc.py::test_sub[3-1-2]", BaseFailure: "assert -2 == 2"}}}},
		{"jest: a test.each title with placeholders", ProofInput{Tests: []TestChange{{Path: "src/calc.test.js", Name: "add › add(%i, %i) = %i", Line: 17, End: 19, Kind: "added"}}, Files: []string{"src/calc.test.js"},
			Base:   *mkRun("npx jest", 1, true, nil, Test{ID: "src/calc.test.js › add › add(2, 2) = 4", Suite: "src/calc.test.js", Name: "add › add(2, 2) = 4", Status: Failed, Message: "Expected: 4"}),
			Change: *mkRun("npx jest", 0, true, nil, Test{ID: "src/calc.test.js › add › add(2, 2) = 4", Suite: "src/calc.test.js", Name: "add › add(2, 2) = 4", Status: Passed})},
			want{proven: []Regression{{Path: "src/calc.test.js", Name: "add › add(%i, %i) = %i", ID: "src/calc.test.js › add › add(2, 2) = 4", BaseFailure: "Expected: 4"}}}},
		{"vitest: a file that does not import on base", ProofInput{Tests: []TestChange{{Path: "src/mul.test.js", Name: "mul", Line: 3, End: 5, Kind: "added"}}, Files: []string{"src/mul.test.js"},
			Base:   *mkRun("npx vitest run", 1, true, []Suite{{Name: "src/mul.test.js", Status: Failed, Error: "failed to run", Message: "SyntaxError: The requested module './calc' does not provide an export named 'mul'", Files: []string{"src/mul.test.js"}, Places: []Place{{"src/mul.test.js", 1}}}}),
			Change: *mkRun("npx vitest run", 0, true, nil, Test{ID: "src/mul.test.js > mul", Suite: "src/mul.test.js", Name: "mul", Status: Passed})},
			want{proven: []Regression{{Path: "src/mul.test.js", Name: "mul", ID: "src/mul.test.js > mul", BaseFailure: "SyntaxError: The requested module './calc' does not provide an export named 'mul'", BuildFailure: true}}}},
		{"jest: a missing package is not a proof", ProofInput{Tests: []TestChange{{Path: "src/mul.test.js", Name: "mul", Line: 3, End: 5, Kind: "added"}}, Files: []string{"src/mul.test.js"},
			Base:   *mkRun("npx jest", 1, true, []Suite{{Name: "src/mul.test.js", Status: Failed, Error: "failed to run", Message: "Cannot find module 'lodash' from 'src/mul.test.js'", Files: []string{"src/mul.test.js"}, Places: []Place{{"src/mul.test.js", 1}}}}),
			Change: *mkRun("npx jest", 0, true, nil, Test{ID: "src/mul.test.js › mul", Suite: "src/mul.test.js", Name: "mul", Status: Passed})},
			want{unproven: []Unproven{{Path: "src/mul.test.js", Name: "mul", Reason: "does not build on the base commit for another reason: Cannot find module 'lodash' from 'src/mul.test.js'"}}}},
		{"cargo: a compile error names the target, not the binary", ProofInput{Tests: []TestChange{{Path: "calc/tests/integration.rs", Name: "subtracts", Line: 7, End: 9, Kind: "added"}}, Files: []string{"calc/tests/integration.rs"},
			Base:   *mkRun("cargo test --test integration", 101, false, []Suite{{Name: `calc (test "integration")`, Status: Failed, Error: "build failed", Message: "error[E0425]: cannot find function `subtract` in crate `calc`", Files: []string{"calc/tests/integration.rs"}, Places: []Place{{"calc/tests/integration.rs", 8}}}}),
			Change: *mkRun("cargo test --test integration", 0, true, nil, Test{ID: "tests/integration.rs (integration) subtracts", Suite: "tests/integration.rs (integration)", Name: "subtracts", Status: Passed})},
			want{proven: []Regression{{Path: "calc/tests/integration.rs", Name: "subtracts", ID: "tests/integration.rs (integration) subtracts", BaseFailure: "error[E0425]: cannot find function `subtract` in crate `calc`", BuildFailure: true}}}},
		{"surefire: a parametrised JUnit 5 method and a nested class's suite", ProofInput{Tests: []TestChange{{Path: "src/test/java/com/example/CalcTest.java", Name: "table", Line: 23, End: 27, Kind: "added"}}, Files: []string{"src/test/java/com/example/CalcTest.java"},
			Base:   *mkRun("mvn test", 1, true, nil, Test{ID: "com.example.CalcTest#table{int, int, int}[2]", Suite: "com.example.CalcTest", Name: "table{int, int, int}[2]", Status: Failed, Message: "expected: <5> but was: <4>"}),
			Change: *mkRun("mvn test", 0, true, nil, Test{ID: "com.example.CalcTest#table{int, int, int}[2]", Suite: "com.example.CalcTest", Name: "table{int, int, int}[2]", Status: Passed})},
			want{proven: []Regression{{Path: "src/test/java/com/example/CalcTest.java", Name: "table", ID: "com.example.CalcTest#table{int, int, int}[2]", BaseFailure: "expected: <5> but was: <4>"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Prove(tc.in)
			if diff := cmp.Diff(tc.want.proven, got.Proven); diff != "" {
				t.Errorf("proven (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want.unproven, got.Unproven); diff != "" {
				t.Errorf("unproven (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProofRetryMerge(t *testing.T) {
	t.Parallel()
	p := Proof{
		Proven:   []Regression{{Path: "a/x_test.go", Name: "TestX"}},
		Unproven: []Unproven{{Path: "a/y_test.go", Name: "TestY", BlockedBy: "a/x_test.go"}, {Path: "a/z_test.go", Name: "TestZ", Reason: "passes on the base commit"}},
	}
	tests := []TestChange{{Path: "a/x_test.go", Name: "TestX"}, {Path: "a/y_test.go", Name: "TestY"}, {Path: "a/z_test.go", Name: "TestZ"}}
	files, retry := p.Retry([]string{"a/x_test.go", "a/y_test.go", "a/z_test.go"}, tests)
	if diff := cmp.Diff([]string{"a/y_test.go", "a/z_test.go"}, files); diff != "" {
		t.Errorf("retry files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]TestChange{{Path: "a/y_test.go", Name: "TestY"}}, retry); diff != "" {
		t.Errorf("retry tests (-want +got):\n%s", diff)
	}
	merged := p.Merge(Proof{Proven: []Regression{{Path: "a/y_test.go", Name: "TestY"}}})
	want := Proof{
		Proven:   []Regression{{Path: "a/x_test.go", Name: "TestX"}, {Path: "a/y_test.go", Name: "TestY"}},
		Unproven: []Unproven{{Path: "a/z_test.go", Name: "TestZ", Reason: "passes on the base commit"}},
	}
	if diff := cmp.Diff(want, merged); diff != "" {
		t.Errorf("Merge (-want +got):\n%s", diff)
	}
	if f, r := (Proof{}).Retry([]string{"a"}, tests); f != nil || r != nil {
		t.Errorf("Retry of a proof with nothing blocked = %v, %v; want nothing", f, r)
	}
}
