package proof

import (
	"path"
	"regexp"
	"strings"
)

var (
	// ciRE matches the files that configure continuous integration.
	ciRE = regexp.MustCompile(`^(?:\.github/(?:workflows|actions)/|\.gitlab/ci/|\.circleci/|\.buildkite/|\.azure-pipelines/|\.woodpecker/|\.ci/)|(?:^|/)(?:\.gitlab-ci\.ya?ml|\.travis\.ya?ml|azure-pipelines[\w.-]*\.ya?ml|Jenkinsfile[\w.-]*|bitbucket-pipelines\.ya?ml|\.drone\.ya?ml|\.?appveyor\.ya?ml|\.woodpecker\.ya?ml|cloudbuild\.ya?ml)$`)
	// lintRE matches the files that configure linters and formatters.
	lintRE = regexp.MustCompile(`(?:^|/)(?:\.golangci\.(?:ya?ml|toml|json)|staticcheck\.conf|\.?revive\.toml|\.eslintrc(?:\.\w+)?|eslint\.config\.[cm]?[jt]s|\.eslintignore|\.prettierrc(?:\.\w+)?|prettier\.config\.[cm]?js|\.prettierignore|\.stylelintrc(?:\.\w+)?|biome\.jsonc?|tslint\.json|\.flake8|\.pylintrc|pylintrc|\.?ruff\.toml|\.?mypy\.ini|pyrightconfig\.json|\.pre-commit-config\.ya?ml|\.rubocop\.ya?ml|\.?clippy\.toml|\.?rustfmt\.toml|deny\.toml|checkstyle[\w.-]*\.xml|spotbugs[\w.-]*\.xml|pmd[\w.-]*\.xml|\.swiftlint\.ya?ml|\.markdownlint[\w.-]*|\.yamllint(?:\.ya?ml)?|\.hadolint\.ya?ml|\.shellcheckrc|\.editorconfig-checker\.json)$`)
	// coverageRE matches the files that configure coverage and its
	// thresholds.
	coverageRE = regexp.MustCompile(`(?:^|/)(?:\.coveragerc|\.?codecov\.ya?ml|\.nycrc(?:\.\w+)?|\.c8rc(?:\.\w+)?|\.testcoverage\.ya?ml|\.?tarpaulin\.toml|\.simplecov)$`)
	// testConfigRE matches the files that configure a test runner.
	testConfigRE = regexp.MustCompile(`(?:^|/)(?:pytest\.ini|jest\.config\.[cm]?[jt]s(?:on)?|vitest\.config\.[cm]?[jt]s|vitest\.workspace\.[cm]?[jt]s|karma\.conf\.[cm]?[jt]s|\.mocharc(?:\.\w+)?|phpunit\.xml(?:\.dist)?|noxfile\.py|\.rspec)$`)

	sectionRE = regexp.MustCompile(`^\s*\[\[?([^\]]+)\]\]?\s*(?:#.*)?$`)
	// narrowKeyRE matches the settings that choose which tests run.
	narrowKeyRE = regexp.MustCompile(`\b(?:testpaths|python_files|python_classes|python_functions|norecursedirs|collect_ignore|testMatch|testRegex|testPathIgnorePatterns|roots|modulePathIgnorePatterns|include|exclude|spec|ignore)\b|--deselect|--ignore\b|(?:^|\s)-k\s|(?:^|\s)-m\s`)
	coverKeyRE  = regexp.MustCompile(`(?i)coverageThreshold|thresholds?|fail[_-]under|--cov-fail-under|minimum|coveredratio|jacoco|cobertura|\bcoverage\b`)
)

// configFlags flags a file's changes to CI, lint, coverage and test runner
// configuration, and to what the test command runs: one flag per kind and
// setting (a section, a script, a target), at its first changed line.
func configFlags(f fileDiff, c Change) []Flag {
	p := f.path()
	base := path.Base(p)
	whole := func(k FlagKind, what string) []Flag {
		fl := Flag{Kind: k, Path: p, Line: firstChange(f), Reason: "changes " + what}
		switch {
		case f.added:
			fl.Reason = "adds " + what
		case f.deleted:
			fl.Reason, fl.Line = "deletes "+what, 0
		}
		return []Flag{fl}
	}
	switch {
	case ciRE.MatchString(p):
		return whole(CIConfig, "CI configuration")
	case lintRE.MatchString(p):
		return whole(LintConfig, "lint configuration")
	case coverageRE.MatchString(p):
		return whole(CoverageConfig, "coverage configuration")
	case testConfigRE.MatchString(p) && (f.added || f.deleted):
		return whole(TestConfig, "test runner configuration")
	}
	var rule func(l diffLine, view lineView) (FlagKind, string)
	switch {
	case base == "pyproject.toml" || base == "setup.cfg" || base == "tox.ini" || base == "pytest.ini":
		rule = pythonConfigRule
	case base == "package.json":
		rule = packageJSONRule(c.TestCommand)
	case base == "Cargo.toml":
		rule = cargoTomlRule
	case base == "pom.xml" || base == "build.gradle" || base == "build.gradle.kts":
		rule = jvmBuildRule
	case base == "Makefile" || base == "makefile" || base == "GNUmakefile" || path.Ext(base) == ".mk":
		rule = makefileRule(c.TestCommand)
	case testConfigRE.MatchString(p):
		rule = jsConfigRule
	case strings.HasPrefix(base, "vite.config."):
		rule = viteConfigRule
	default:
		return nil
	}
	before := strings.Split(string(c.Before[f.oldPath]), "\n")
	after := strings.Split(string(c.After[f.newPath]), "\n")
	_, haveBefore := c.Before[f.oldPath]
	_, haveAfter := c.After[f.newPath]
	var flags []Flag
	done := map[string]bool{} // one flag per kind and setting
	for _, h := range f.hunks {
		replaced := replacedLines(h)
		for i, l := range h.lines {
			if l.op == ' ' || replaced[i] {
				continue
			}
			view := lineView{hunk: h.lines[:i+1]}
			switch {
			case l.op == '+' && haveAfter:
				view.file, view.line = after, l.newLine
			case l.op == '-' && haveBefore:
				view.file, view.line = before, l.oldLine
			}
			k, what := rule(l, view)
			if k == "" || done[string(k)+what] {
				continue
			}
			done[string(k)+what] = true
			line := l.newLine
			if l.op == '-' {
				line = l.oldLine
			}
			verb := "changes "
			if l.op == '-' {
				verb = "removes from "
			}
			flags = append(flags, Flag{Kind: k, Path: p, Line: line, Reason: verb + what + ": " + codeSpan(l.text)})
		}
	}
	return flags
}

// replacedLines marks the removed lines of a hunk that lines added next to
// them replace: a changed line is read as what it became.
func replacedLines(h hunk) map[int]bool {
	out := map[int]bool{}
	for i := 0; i < len(h.lines); {
		if h.lines[i].op == ' ' {
			i++
			continue
		}
		j, added := i, false
		for j < len(h.lines) && h.lines[j].op != ' ' {
			added = added || h.lines[j].op == '+'
			j++
		}
		for k := i; k < j && added; k++ {
			if h.lines[k].op == '-' {
				out[k] = true
			}
		}
		i = j
	}
	return out
}

// lineView is what is known around a changed line: the whole file on its
// side of the change (when the contents were given) with the line's
// number, else the hunk up to the line.
type lineView struct {
	file []string
	line int
	hunk []diffLine
}

// above returns the lines above the changed one, nearest first.
func (v lineView) above() []string {
	var out []string
	if v.file != nil && v.line > 0 && v.line <= len(v.file) {
		for i := v.line - 2; i >= 0; i-- {
			out = append(out, v.file[i])
		}
		return out
	}
	op := v.hunk[len(v.hunk)-1].op
	for i := len(v.hunk) - 2; i >= 0; i-- {
		if v.hunk[i].op == ' ' || v.hunk[i].op == op {
			out = append(out, v.hunk[i].text)
		}
	}
	return out
}

// section returns the INI or TOML section the changed line is in: the
// line's own header, or the nearest above.
func (v lineView) section(text string) string {
	if m := sectionRE.FindStringSubmatch(text); m != nil {
		return strings.TrimSpace(m[1])
	}
	for _, l := range v.above() {
		if m := sectionRE.FindStringSubmatch(l); m != nil {
			return strings.TrimSpace(m[1])
		}
	}
	return ""
}

func pythonConfigRule(l diffLine, v lineView) (FlagKind, string) {
	sec := v.section(l.text)
	switch {
	case strings.TrimSpace(l.text) == "" || strings.HasPrefix(strings.TrimSpace(l.text), "#"):
		return "", ""
	case sec == "tool.pytest.ini_options" || sec == "tool:pytest" || sec == "pytest":
		if narrowKeyRE.MatchString(l.text) {
			return NarrowedTests, "which tests pytest runs"
		}
		if coverKeyRE.MatchString(l.text) {
			return CoverageConfig, "pytest's coverage options"
		}
		return TestConfig, "pytest's configuration"
	case strings.HasPrefix(sec, "tool.coverage") || strings.HasPrefix(sec, "coverage:") || sec == "run" || sec == "report":
		return CoverageConfig, "coverage configuration"
	case strings.HasPrefix(sec, "testenv") || strings.HasPrefix(sec, "tox"):
		return NarrowedTests, "tox's test environments"
	case sec == "flake8" || sec == "pycodestyle" || sec == "pydocstyle" || sec == "isort" || strings.HasPrefix(sec, "mypy") || strings.HasPrefix(sec, "pylint") ||
		strings.HasPrefix(sec, "tool.ruff") || strings.HasPrefix(sec, "tool.mypy") || strings.HasPrefix(sec, "tool.pylint") || sec == "tool.black" || sec == "tool.isort" || strings.HasPrefix(sec, "tool.pyright") || sec == "tool.flake8" || sec == "tool.bandit":
		return LintConfig, "lint configuration"
	}
	return "", ""
}

var (
	jsonKeyRE = regexp.MustCompile(`^\s*"([^"]+)"\s*:`)
	// testScriptRE matches the names of package.json scripts that test,
	// lint or check.
	testScriptRE = regexp.MustCompile(`(?i)test|lint|check|cover|ci\b|spec`)
)

// packageJSONRule flags the scripts that test, the one the test command
// runs, and the jest, eslint, nyc and c8 settings.
func packageJSONRule(command string) func(diffLine, lineView) (FlagKind, string) {
	script := npmScript(command)
	return func(l diffLine, v lineView) (FlagKind, string) {
		key := ""
		if m := jsonKeyRE.FindStringSubmatch(l.text); m != nil {
			key = m[1]
		}
		top := jsonTopKey(v, l.text)
		switch {
		case top == "scripts" && key != "" && (key == script || testScriptRE.MatchString(key)):
			if strings.Contains(strings.ToLower(key), "lint") {
				return LintConfig, "the package.json script " + key
			}
			return NarrowedTests, "the package.json script " + key + ", which runs tests"
		case top == "jest" || key == "jest":
			if coverKeyRE.MatchString(l.text) {
				return CoverageConfig, "Jest's coverage thresholds"
			}
			if narrowKeyRE.MatchString(l.text) {
				return NarrowedTests, "which tests Jest runs"
			}
			return TestConfig, "Jest's configuration in package.json"
		case top == "eslintConfig" || top == "prettier" || top == "stylelint" || key == "eslintConfig":
			return LintConfig, "lint configuration in package.json"
		case top == "nyc" || top == "c8" || key == "nyc" || key == "c8" || strings.Contains(l.text, "coverageThreshold"):
			return CoverageConfig, "coverage configuration in package.json"
		}
		return "", ""
	}
}

// jsonTopKey returns the top-level key of package.json the changed line
// is under, from the lines above it (counting braces outside strings).
func jsonTopKey(v lineView, text string) string {
	above := v.above()
	if v.file == nil {
		// Only the hunk: the nearest key line less indented than the
		// changed one.
		ind := indentOf(text)
		for _, l := range above {
			if m := jsonKeyRE.FindStringSubmatch(l); m != nil && indentOf(l) < ind && strings.HasSuffix(strings.TrimSpace(l), "{") {
				return m[1]
			}
		}
		return ""
	}
	depth, top := 0, ""
	for i := 0; i < v.line-1 && i < len(v.file); i++ {
		l := v.file[i]
		if m := jsonKeyRE.FindStringSubmatch(l); m != nil && depth == 1 {
			top = m[1]
		}
		depth += jsonDepth(l)
	}
	if m := jsonKeyRE.FindStringSubmatch(text); m != nil && depth == 1 {
		return m[1]
	}
	return top
}

// jsonDepth returns how much a line of JSON opens ({ [) minus what it
// closes, outside strings.
func jsonDepth(l string) int {
	d, in := 0, false
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == '{' || c == '['):
			d++
		case !in && (c == '}' || c == ']'):
			d--
		}
	}
	return d
}

// npmScript returns the package.json script the test command runs: "test"
// for npm test, X for npm run X; "" for another command.
func npmScript(command string) string {
	for _, argv := range simpleCommands(command) {
		argv = unwrap(argv)
		if len(argv) < 2 {
			continue
		}
		switch prog := path.Base(argv[0]); {
		case (prog == "npm" || prog == "pnpm" || prog == "yarn" || prog == "bun") && (argv[1] == "test" || argv[1] == "t"):
			return "test"
		case (prog == "npm" || prog == "pnpm" || prog == "yarn" || prog == "bun") && (argv[1] == "run" || argv[1] == "run-script") && len(argv) > 2:
			return argv[2]
		case prog == "yarn" || prog == "pnpm":
			return argv[1]
		}
	}
	return ""
}

var cargoOffRE = regexp.MustCompile(`^(?:test|harness)\s*=\s*false`)

func cargoTomlRule(l diffLine, v lineView) (FlagKind, string) {
	sec := v.section(l.text)
	t := strings.TrimSpace(l.text)
	switch {
	case t == "" || strings.HasPrefix(t, "#"):
		return "", ""
	case sec == "test" || cargoOffRE.MatchString(t):
		return NarrowedTests, "which test targets cargo builds"
	case sec == "lints" || strings.HasPrefix(sec, "lints.") || strings.HasPrefix(sec, "workspace.lints"):
		return LintConfig, "lint configuration"
	}
	return "", ""
}

var (
	jvmTestRE  = regexp.MustCompile(`skipTests|maven\.test\.skip|testFailureIgnore|failIfNoTests|<excludes?>|<includes?>|<groups>|<excludedGroups>|<test>|surefire|failsafe|ignoreFailures|excludeTags|includeTags|\bexclude\s*[("']|\bfilter\s*\{|enabled\s*=\s*false|useJUnitPlatform`)
	jvmCoverRE = regexp.MustCompile(`(?i)jacoco|cobertura|kover|coveredratio|<minimum>|minimum\s*=|violationRules`)
	jvmLintRE  = regexp.MustCompile(`(?i)checkstyle|spotbugs|\bpmd\b|errorprone|error_prone|spotless|ktlint|detekt`)
)

// jvmBuildRule flags, by keyword, the Maven and Gradle settings that skip
// or filter tests, set coverage rules or configure linters.
func jvmBuildRule(l diffLine, _ lineView) (FlagKind, string) {
	switch {
	case jvmTestRE.MatchString(l.text):
		return NarrowedTests, "which tests the build runs"
	case jvmCoverRE.MatchString(l.text):
		return CoverageConfig, "coverage rules"
	case jvmLintRE.MatchString(l.text):
		return LintConfig, "lint configuration"
	}
	return "", ""
}

func jsConfigRule(l diffLine, _ lineView) (FlagKind, string) {
	t := strings.TrimSpace(l.text)
	switch {
	case t == "" || strings.HasPrefix(t, "//"):
		return "", ""
	case coverKeyRE.MatchString(l.text):
		return CoverageConfig, "coverage thresholds"
	case narrowKeyRE.MatchString(l.text):
		return NarrowedTests, "which tests run"
	}
	return TestConfig, "test runner configuration"
}

var viteTestRE = regexp.MustCompile(`\btest\s*:|\binclude\b|\bexclude\b|\bcoverage\b|\bthresholds?\b`)

func viteConfigRule(l diffLine, v lineView) (FlagKind, string) {
	if !viteTestRE.MatchString(l.text) {
		return "", ""
	}
	return jsConfigRule(l, v)
}

var (
	makeRuleRE = regexp.MustCompile(`^([^\s#:=][^:=]*?)\s*::?(?:[^=]|$)`)
	makeVarRE  = regexp.MustCompile(`^\s*(?:export\s+|override\s+)?([A-Za-z_][\w.]*)\s*(?:[:+?!]?=|::=)`)
	makeTestRE = regexp.MustCompile(`(?i)test|check|cover|lint|\bci\b`)
)

// makefileRule flags changes to the targets that test (those named like
// test, check, cover, lint or ci, and the one the test command makes) and
// to variables named so.
func makefileRule(command string) func(diffLine, lineView) (FlagKind, string) {
	target := makeTarget(command)
	watch := func(name string) bool { return name == target || makeTestRE.MatchString(name) }
	kind := func(name string) FlagKind {
		switch n := strings.ToLower(name); {
		case strings.Contains(n, "lint"):
			return LintConfig
		case strings.Contains(n, "cover"):
			return CoverageConfig
		}
		return NarrowedTests
	}
	return func(l diffLine, v lineView) (FlagKind, string) {
		t := l.text
		if strings.TrimSpace(t) == "" || strings.HasPrefix(strings.TrimSpace(t), "#") {
			return "", ""
		}
		if !strings.HasPrefix(t, "\t") {
			if m := makeVarRE.FindStringSubmatch(t); m != nil {
				if makeTestRE.MatchString(m[1]) {
					return kind(m[1]), "the Makefile variable " + m[1]
				}
				return "", ""
			}
			if m := makeRuleRE.FindStringSubmatch(t); m != nil {
				for _, name := range strings.Fields(m[1]) {
					if watch(name) {
						return kind(name), "the Makefile target " + name
					}
				}
			}
			return "", ""
		}
		// A recipe line: find its rule above.
		for _, a := range v.above() {
			if strings.HasPrefix(a, "\t") || strings.TrimSpace(a) == "" || strings.HasPrefix(strings.TrimSpace(a), "#") {
				continue
			}
			if m := makeRuleRE.FindStringSubmatch(a); m != nil && makeVarRE.FindStringSubmatch(a) == nil {
				for _, name := range strings.Fields(m[1]) {
					if watch(name) {
						return kind(name), "the Makefile target " + name
					}
				}
			}
			break
		}
		return "", ""
	}
}

// makeTarget returns the first target the test command makes ("test" for
// make test), or "".
func makeTarget(command string) string {
	for _, argv := range simpleCommands(command) {
		argv = unwrap(argv)
		if len(argv) == 0 || path.Base(argv[0]) != "make" && path.Base(argv[0]) != "gmake" {
			continue
		}
		for i := 1; i < len(argv); i++ {
			a := argv[i]
			switch {
			case a == "-C" || a == "-f" || a == "-j" && i+1 < len(argv) && isDigits(argv[i+1]):
				i++
			case strings.HasPrefix(a, "-") || isAssignment(a):
			default:
				return a
			}
		}
	}
	return ""
}
