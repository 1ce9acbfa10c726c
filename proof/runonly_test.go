package proof

import (
	"errors"
	"strings"
	"testing"
)

func TestRunOnly(t *testing.T) {
	t.Parallel()
	goTests := []TestChange{
		{Path: "num/abs_test.go", Name: "TestAbsNegative", Kind: "added"},
		{Path: "num/abs_test.go", Name: "TestAbsOld", Kind: "deleted"},
		{Path: "clamp_test.go", Name: "TestClamp", Kind: "edited"},
	}
	for _, tc := range []struct {
		name    string
		command string
		files   []string
		tests   []TestChange
		want    string
		wantErr string
	}{
		{"go test", "go test ./...", []string{"num/abs_test.go", "clamp_test.go"}, goTests,
			"go test -json -run '^(TestAbsNegative|TestClamp)$' ./num .", ""},
		{"go test keeps its flags, drops its -run and packages", "CGO_ENABLED=1 go test -race -run=TestOld -tags integration -count 1 ./... -args -update", []string{"num/abs_test.go", "num/testdata/abs.golden"}, goTests[:1],
			"CGO_ENABLED=1 go test -race -tags integration -count 1 -json -run '^(TestAbsNegative)$' ./num -args -update", ""},
		{"go test -json already", "go test -json -v ./...", []string{"num/testdata/x.txt"}, nil,
			"go test -json -v ./num", ""},
		{"go test -C", "go test -C sub ./...", []string{"num/abs_test.go"}, goTests, "", "-C"},
		{"go test without go test files", "go test ./...", []string{"README.md"}, nil, "", "no Go test file"},
		{"pytest", "pytest -q -k 'not slow' --maxfail 2 tests/", []string{"tests/test_calc.py", "tests/conftest.py", "tests/data.json"}, nil,
			"pytest -q -k 'not slow' --maxfail 2 --continue-on-collection-errors -rA tests/test_calc.py", ""},
		{"python -m pytest behind poetry", "poetry run python -m pytest -rfE", []string{"test_a.py", "pkg/b_test.py"}, nil,
			"poetry run python -m pytest --continue-on-collection-errors -rA test_a.py pkg/b_test.py", ""},
		{"jest", "npx jest --ci --coverage --shard=1/2 src", []string{"src/a.test.ts", "src/__mocks__/fs.js"}, nil,
			"npx jest --ci --coverage --verbose --runTestsByPath src/a.test.ts", ""},
		{"vitest", "pnpm exec vitest --reporter dot --project unit", []string{"src/a.test.ts"}, nil,
			"pnpm exec vitest run --project unit --reporter=verbose src/a.test.ts", ""},
		{"cargo test", "cargo +nightly test --workspace --lib --features x -- --test-threads=1 slow", []string{"calc/tests/integration.rs", "calc/tests/common/mod.rs", "tests/cli/main.rs"},
			[]TestChange{{Path: "calc/tests/integration.rs", Name: "subtracts", Kind: "added"}},
			"cargo +nightly test --workspace --features x --test integration --test cli --no-fail-fast -- --test-threads=1 subtracts", ""},
		{"cargo test with inline tests", "cargo test", []string{"src/lib.rs"}, nil, "", "inside the source"},
		{"maven", "mvn -q -B test", []string{"src/test/java/com/x/FooTest.java", "core/src/test/java/com/x/BarTest.java"},
			[]TestChange{{Path: "src/test/java/com/x/FooTest.java", Name: "adds", Kind: "added"}, {Path: "src/test/java/com/x/FooTest.java", Name: "subs", Kind: "edited"}},
			"mvn -q -B test '-Dtest=FooTest#adds+subs,BarTest' -Dsurefire.failIfNoSpecifiedTests=false -DfailIfNoTests=false", ""},
		{"maven without a test phase", "mvn compile", []string{"src/test/java/com/x/FooTest.java"}, nil, "", "no phase"},
		{"gradle", "./gradlew test --info", []string{"src/test/java/com/x/FooTest.java"}, []TestChange{{Path: "src/test/java/com/x/FooTest.java", Name: "adds", Kind: "added"}},
			"./gradlew test --tests com.x.FooTest.adds --info", ""},
		{"make test", "make test", []string{"a_test.go"}, nil, "", "runs no test tool"},
		{"npm test", "npm test", []string{"a.test.js"}, nil, "", "runs no test tool"},
		{"a list", "go vet ./... && go test ./...", []string{"a_test.go"}, nil, "", "not a single command"},
		{"a pipe", "go test ./... | tail -n 50", []string{"a_test.go"}, nil, "", "not a single command"},
		{"a redirection", "go test ./... 2>&1", []string{"a_test.go"}, nil, "", "shell syntax"},
		{"a variable", "go test $PKGS", []string{"a_test.go"}, nil, "", "shell syntax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := RunOnly(tc.command, tc.files, tc.tests)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrCannotNarrow) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("RunOnly(%q) = %q, %v; want an ErrCannotNarrow error about %q", tc.command, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("RunOnly(%q) = %q, %v;\nwant %q", tc.command, got, err, tc.want)
			}
			if f, g := CommandFormats(tc.command), CommandFormats(got); len(f) != 1 || len(g) != 1 || f[0] != g[0] {
				t.Errorf("the narrowed command runs %v, the original %v", g, f)
			}
		})
	}
}
