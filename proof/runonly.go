package proof

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
)

// ErrCannotNarrow is wrapped by RunOnly's errors: the command cannot be cut
// down to the change's tests, and the harness runs it whole.
var ErrCannotNarrow = errors.New("cannot narrow the test command")

// RunOnly returns the test command cut down to the change's test files
// (files, paths relative to the directory the command runs in) and, where
// the tool selects tests by name, to the tests the change adds or edits
// (tests, from ChangedTests; deleted ones are left out). The result also
// asks the tool to list every test, so Parse sees passing tests too:
//
//   - go test: the test files' packages, -run '^(TestA|TestB)$', -json;
//   - pytest: the test files (pytest will not start when a node id's
//     file fails to import), -rA,
//     --continue-on-collection-errors;
//   - Jest: --runTestsByPath with the files, --verbose;
//   - Vitest: vitest run with the files, --reporter=verbose;
//   - cargo test: --test NAME for each tests/NAME.rs, the names as
//     filters, --no-fail-fast;
//   - Maven: -Dtest=Class#a+b and the flags that allow modules with no
//     match; Gradle: --tests Class.method after the test task.
//
// Flags of the original command are kept (-race, -tags, -p, --features,
// env assignments and wrappers); its own selection of packages, paths and
// filters is replaced. The error wraps ErrCannotNarrow and says why when
// the command is not a single invocation of one of these tools (a list, a
// pipe, a redirection, make test, npm test), when the tool's files are not
// among the change's test files, or when a test sits in a source file
// (a Rust #[cfg(test)] module), whose tests cannot run on the base commit
// without the fix.
func RunOnly(command string, files []string, tests []TestChange) (string, error) {
	fail := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%w: %s", ErrCannotNarrow, fmt.Sprintf(format, args...))
	}
	toks, plain := shellTokens(command)
	if !plain {
		return fail("%q uses shell syntax (variables, globs, redirections, substitutions) it does not follow", command)
	}
	var argv []string
	for _, t := range toks {
		if t.op != "" {
			return fail("%q is not a single command", command)
		}
		argv = append(argv, t.word)
	}
	rest := unwrap(argv)
	prefix := argv[:len(argv)-len(rest)]
	names := map[string][]string{}
	for _, t := range tests {
		if t.Kind != "deleted" && !slices.Contains(names[t.Path], t.Name) {
			names[t.Path] = append(names[t.Path], t.Name)
		}
	}
	var out []string
	var err error
	switch toolOf(rest) {
	case GoTest:
		out, err = narrowGo(rest, files, names)
	case Pytest:
		out, err = narrowPytest(rest, files)
	case Jest:
		out, err = narrowJest(rest, files)
	case Vitest:
		out, err = narrowVitest(rest, files)
	case Cargo:
		out, err = narrowCargo(rest, files, names)
	case Surefire:
		out, err = narrowJVM(rest, files, names)
	default:
		return fail("%q runs no test tool it knows (go test, pytest, jest, vitest, cargo test, mvn, gradle)", command)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrCannotNarrow, err)
	}
	return joinArgv(append(append([]string(nil), prefix...), out...)), nil
}

// joinArgv quotes an argument list for a POSIX shell; an env assignment
// keeps its name unquoted.
func joinArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if isAssignment(a) {
			name, val, _ := strings.Cut(a, "=")
			q[i] = name + "=" + quote(val)
			continue
		}
		q[i] = quote(a)
	}
	return strings.Join(q, " ")
}

// takesValue reports whether option a (no "=") takes the next word as its
// value, by the tool's table of such options.
func takesValue(a string, table []string) bool {
	return !strings.Contains(a, "=") && slices.Contains(table, a)
}

var goValueFlags = []string{"-run", "-skip", "-bench", "-benchtime", "-count", "-cpu", "-parallel", "-timeout", "-tags", "-coverprofile", "-covermode", "-coverpkg", "-p", "-ldflags", "-gcflags", "-asmflags", "-gccgoflags", "-o", "-exec", "-mod", "-modfile", "-blockprofile", "-blockprofilerate", "-cpuprofile", "-memprofile", "-memprofilerate", "-mutexprofile", "-mutexprofilefraction", "-outputdir", "-trace", "-shuffle", "-fuzz", "-fuzztime", "-fuzzminimizetime", "-list", "-vet", "-buildmode", "-compiler", "-installsuffix", "-pkgdir", "-toolexec", "-overlay", "-pgo"}

func narrowGo(argv []string, files []string, names map[string][]string) ([]string, error) {
	var flags, after []string
	hasJSON := false
	for i := 2; i < len(argv); i++ {
		a := argv[i]
		flagName, _, _ := strings.Cut(strings.Replace(a, "--", "-", 1), "=")
		switch {
		case a == "-args":
			after = argv[i:]
			i = len(argv)
		case flagName == "-C":
			return nil, errors.New("go test -C changes the directory the test files' paths are relative to")
		case flagName == "-run" || flagName == "-list" || flagName == "-bench" || flagName == "-fuzz":
			if takesValue(flagName, goValueFlags) && !strings.Contains(a, "=") {
				i++
			}
		case strings.HasPrefix(a, "-"):
			hasJSON = hasJSON || flagName == "-json"
			flags = append(flags, a)
			if takesValue(flagName, goValueFlags) && i+1 < len(argv) {
				i++
				flags = append(flags, argv[i])
			}
		}
		// Anything else names packages: replaced below.
	}
	var pkgs []string
	var run []string
	for _, f := range files {
		if lang(f) != "go" && !strings.Contains("/"+f, "/testdata/") || Classify(f, nil) != TestFile {
			continue
		}
		pkg := "."
		if dir := goPkgDir(f); dir != "." {
			pkg = "./" + dir
		}
		if !slices.Contains(pkgs, pkg) {
			pkgs = append(pkgs, pkg)
		}
		for _, n := range names[f] {
			top, _, _ := strings.Cut(n, "/")
			if isGoTestName(top) && !slices.Contains(run, top) {
				run = append(run, top)
			}
		}
	}
	if len(pkgs) == 0 {
		return nil, errors.New("no Go test file among the change's files")
	}
	sort.Strings(run)
	out := append([]string{"go", "test"}, flags...)
	if !hasJSON {
		out = append(out, "-json")
	}
	if len(run) > 0 {
		out = append(out, "-run", "^("+strings.Join(run, "|")+")$")
	}
	out = append(out, pkgs...)
	return append(out, after...), nil
}

var pytestValueOpts = []string{"-k", "-m", "-c", "-p", "-o", "-W", "-n", "-r", "--tb", "--maxfail", "--durations", "--durations-min", "--rootdir", "--basetemp", "--confcutdir", "--ignore", "--ignore-glob", "--deselect", "--junitxml", "--junit-xml", "--junit-prefix", "--cov", "--cov-report", "--cov-config", "--cov-fail-under", "--log-level", "--log-cli-level", "--log-file", "--log-format", "--import-mode", "--capture", "--color", "--dist", "--numprocesses", "--maxprocesses", "--timeout", "--reruns", "--reruns-delay", "--randomly-seed", "--override-ini", "--config-file", "--asyncio-mode", "--ds", "--dc"}

func narrowPytest(argv []string, files []string) ([]string, error) {
	start := 1
	if path.Base(argv[0]) != "pytest" && path.Base(argv[0]) != "py.test" && !strings.HasPrefix(path.Base(argv[0]), "pytest-") {
		start = 3 // python -m pytest
	}
	out := append([]string(nil), argv[:start]...)
	for i := start; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-r" || strings.HasPrefix(a, "-r") && !strings.HasPrefix(a, "--"):
			if a == "-r" {
				i++
			}
		case strings.HasPrefix(a, "-"):
			out = append(out, a)
			if takesValue(a, pytestValueOpts) && i+1 < len(argv) {
				i++
				out = append(out, argv[i])
			}
		}
	}
	// Files, not node ids: pytest refuses to run at all when a node id's
	// file fails to import, which is what a new test does on the base code.
	var ids []string
	for _, f := range files {
		base := path.Base(f)
		if path.Ext(f) == ".py" && (strings.HasPrefix(base, "test") || strings.HasSuffix(base, "_test.py")) {
			ids = append(ids, f)
		}
	}
	if len(ids) == 0 {
		return nil, errors.New("no pytest test file (test_*.py, *_test.py) among the change's files")
	}
	// A test file that does not import on the base commit must not stop
	// the others from running.
	if !slices.Contains(out, "--continue-on-collection-errors") {
		out = append(out, "--continue-on-collection-errors")
	}
	return append(append(out, "-rA"), ids...), nil
}

var jestValueOpts = []string{"-c", "--config", "-t", "--testNamePattern", "-w", "--maxWorkers", "--rootDir", "--roots", "--selectProjects", "--env", "--testEnvironment", "--testTimeout", "--testPathIgnorePatterns", "--coverageReporters", "--collectCoverageFrom", "--setupFiles", "--setupFilesAfterEnv", "--moduleNameMapper", "--transform", "--seed"}

// jestDropped are the options that select other files or move the output:
// the change's files replace them.
var jestDropped = []string{"--testPathPattern", "--testPathPatterns", "--shard", "--reporters", "--outputFile", "--watch", "--watchAll", "--onlyChanged", "-o", "--changedSince", "--findRelatedTests", "--listTests", "--runTestsByPath"}

func jsTestFiles(files []string) []string {
	var out []string
	for _, f := range files {
		if lang(f) == "js" && IsTestFile(f) && !strings.Contains("/"+f, "/__mocks__/") && !strings.Contains("/"+f, "/__fixtures__/") {
			out = append(out, f)
		}
	}
	return out
}

func narrowJest(argv []string, files []string) ([]string, error) {
	out := []string{argv[0]}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		name, _, hasEq := strings.Cut(a, "=")
		switch {
		case slices.Contains(jestDropped, name):
			if !hasEq && (name == "--testPathPattern" || name == "--testPathPatterns" || name == "--shard" || name == "--reporters" || name == "--outputFile" || name == "--changedSince") {
				i++
			}
		case strings.HasPrefix(a, "-"):
			out = append(out, a)
			if takesValue(a, jestValueOpts) && i+1 < len(argv) {
				i++
				out = append(out, argv[i])
			}
		}
	}
	fs := jsTestFiles(files)
	if len(fs) == 0 {
		return nil, errors.New("no JavaScript or TypeScript test file among the change's files")
	}
	if !slices.Contains(out, "--verbose") {
		out = append(out, "--verbose")
	}
	return append(append(out, "--runTestsByPath"), fs...), nil
}

var vitestValueOpts = []string{"-c", "--config", "-r", "--root", "--dir", "-t", "--testNamePattern", "--project", "--environment", "--pool", "--mode", "--maxWorkers", "--minWorkers", "--testTimeout", "--hookTimeout", "--sequence.seed", "--bail", "--retry"}

func narrowVitest(argv []string, files []string) ([]string, error) {
	out := []string{argv[0], "run"}
	i := 1
	if i < len(argv) && (argv[i] == "run" || argv[i] == "watch" || argv[i] == "dev") {
		i++
	}
	for ; i < len(argv); i++ {
		a := argv[i]
		name, _, hasEq := strings.Cut(a, "=")
		switch {
		case name == "--reporter" || name == "--reporters" || name == "--shard" || name == "--outputFile" || strings.HasPrefix(name, "--outputFile."):
			if !hasEq {
				i++
			}
		case name == "--watch" || name == "-w" || name == "--changed" || name == "--run":
		case strings.HasPrefix(a, "-"):
			out = append(out, a)
			if takesValue(a, vitestValueOpts) && i+1 < len(argv) {
				i++
				out = append(out, argv[i])
			}
		}
	}
	fs := jsTestFiles(files)
	if len(fs) == 0 {
		return nil, errors.New("no JavaScript or TypeScript test file among the change's files")
	}
	return append(append(out, "--reporter=verbose"), fs...), nil
}

var cargoValueOpts = []string{"-p", "--package", "--exclude", "-F", "--features", "--target", "--target-dir", "--manifest-path", "-j", "--jobs", "--profile", "--color", "--message-format", "--config", "-Z", "--lockfile-path"}

// cargoTargets are the options that pick test targets: the change's
// replace them.
var cargoTargets = []string{"--lib", "--bins", "--tests", "--benches", "--examples", "--doc", "--all-targets", "--bin", "--test", "--bench", "--example"}

func narrowCargo(argv []string, files []string, names map[string][]string) ([]string, error) {
	out := []string{argv[0]}
	i := 1
	for ; i < len(argv) && argv[i] != "test"; i++ {
		out = append(out, argv[i]) // +toolchain
	}
	out = append(out, "test")
	var libtest []string
	for i++; i < len(argv); i++ {
		a := argv[i]
		name, _, hasEq := strings.Cut(a, "=")
		switch {
		case a == "--":
			for _, b := range argv[i+1:] {
				if strings.HasPrefix(b, "-") {
					libtest = append(libtest, b)
				}
			}
			i = len(argv)
		case slices.Contains(cargoTargets, name):
			if !hasEq && (name == "--bin" || name == "--test" || name == "--bench" || name == "--example") {
				i++
			}
		case strings.HasPrefix(a, "-"):
			out = append(out, a)
			if takesValue(a, cargoValueOpts) && i+1 < len(argv) {
				i++
				out = append(out, argv[i])
			}
		}
		// A positional word is a test name filter: replaced below.
	}
	var targets, filters []string
	for _, f := range files {
		if lang(f) != "rust" {
			continue
		}
		parts := strings.Split(f, "/")
		t := -1
		for k, p := range parts {
			if p == "tests" {
				t = k
			}
		}
		target := ""
		switch {
		case t < 0:
			return nil, fmt.Errorf("%s holds tests inside the source, which cannot run on the base commit without the fix", f)
		case t == len(parts)-2:
			target = strings.TrimSuffix(parts[t+1], ".rs")
		case t == len(parts)-3 && parts[len(parts)-1] == "main.rs":
			target = parts[t+1]
		default:
			continue // a helper module of the tests
		}
		if !slices.Contains(targets, target) {
			targets = append(targets, target)
		}
		for _, n := range names[f] {
			if !slices.Contains(filters, n) {
				filters = append(filters, n)
			}
		}
	}
	if len(targets) == 0 {
		return nil, errors.New("no Rust integration test file (tests/*.rs) among the change's files")
	}
	for _, t := range targets {
		out = append(out, "--test", t)
	}
	out = append(out, "--no-fail-fast")
	if len(filters) > 0 || len(libtest) > 0 {
		out = append(append(append(out, "--"), libtest...), filters...)
	}
	return out, nil
}

func narrowJVM(argv []string, files []string, names map[string][]string) ([]string, error) {
	var classes []string
	methods := map[string][]string{}
	for _, f := range files {
		if lang(f) != "java" || !javaTestSetRE.MatchString(f) {
			continue
		}
		c := classOfFile(f)
		if !slices.Contains(classes, c) {
			classes = append(classes, c)
		}
		methods[c] = append(methods[c], names[f]...)
	}
	if len(classes) == 0 {
		return nil, errors.New("no JVM test file (src/test/…) among the change's files")
	}
	prog := path.Base(argv[0])
	if prog == "gradle" || prog == "gradlew" {
		at := -1
		for i, a := range argv {
			if a == "test" || strings.HasSuffix(a, ":test") {
				at = i
			}
		}
		if at < 0 {
			return nil, errors.New("the gradle command runs no test task to pass --tests to")
		}
		var sel []string
		for _, c := range classes {
			if len(methods[c]) == 0 {
				sel = append(sel, "--tests", c)
				continue
			}
			for _, m := range methods[c] {
				sel = append(sel, "--tests", c+"."+m)
			}
		}
		out := append(append([]string(nil), argv[:at+1]...), sel...)
		return append(out, argv[at+1:]...), nil
	}
	runs := false
	var out []string
	for _, a := range argv {
		if strings.HasPrefix(a, "-Dtest=") || strings.HasPrefix(a, "-Dit.test=") {
			continue
		}
		switch a {
		case "test", "verify", "install", "package", "integration-test", "deploy":
			runs = true
		}
		out = append(out, a)
	}
	if !runs {
		return nil, errors.New("the mvn command runs no phase that runs tests (test, verify, install, …)")
	}
	var sel []string
	for _, c := range classes {
		simple := c[strings.LastIndexByte(c, '.')+1:]
		if len(methods[c]) > 0 {
			simple += "#" + strings.Join(methods[c], "+")
		}
		sel = append(sel, simple)
	}
	return append(out, "-Dtest="+strings.Join(sel, ","), "-Dsurefire.failIfNoSpecifiedTests=false", "-DfailIfNoTests=false"), nil
}

// goPkgDir returns the directory of the package a Go test file, or a file
// of its testdata, belongs to.
func goPkgDir(f string) string {
	dir := path.Dir(f)
	parts := strings.Split(dir, "/")
	for i, p := range parts {
		if p == "testdata" {
			return path.Join(append([]string{"."}, parts[:i]...)...)
		}
	}
	return dir
}
