package proof

import (
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Input is one run of a test command as the harness captured it.
type Input struct {
	Command  string
	ExitCode int
	TimedOut bool
	// Output is the command's combined standard output and error, possibly
	// cut by a head+tail cap (workspace.HeadTail).
	Output string
	// Dir is the directory the command ran in, as the tools saw it (inside
	// the sandbox: /workspace). Paths some tools print absolute (Jest's and
	// Vitest's JSON reports, tracebacks, compiler errors) are made relative
	// to it; without it they are left out of Suite.Files.
	Dir string
	// Reports holds the JUnit XML reports the run wrote, by path relative
	// to the working copy (see IsReport).
	Reports map[string][]byte
}

// Parse reads the results of one run of a test command. The tools to read
// come from the command (go test, pytest, python -m pytest, jest, vitest,
// cargo test, mvn and gradle, behind env, npx, poetry run and the like);
// for a command that names none of them (make test, npm test, a script) from
// the output's own marks. JUnit XML reports are read whatever the command.
// When no parser applies, the Run holds only the exit code, the time-out
// and the output's tail.
func Parse(in Input) Run {
	ls := lines(in.Output)
	run := Run{Command: in.Command, ExitCode: in.ExitCode, TimedOut: in.TimedOut, Cut: cut(ls), Tail: tail(ls)}
	formats := CommandFormats(in.Command)
	if len(formats) == 0 {
		formats = outputFormats(ls)
	}
	if len(in.Reports) > 0 && !slices.Contains(formats, Surefire) {
		formats = append(formats, Surefire)
	}
	complete := true
	tests := map[string]Test{}
	suites := map[string]Suite{}
	for _, f := range formats {
		var r results
		switch f {
		case GoTest:
			r = parseGo(ls)
		case Pytest:
			r = parsePytest(ls, in.Dir)
		case Jest:
			r = parseJest(ls, in.Dir)
		case Vitest:
			r = parseVitest(ls, in.Dir)
		case Cargo:
			r = parseCargo(ls)
		case Surefire:
			var warnings []string
			r, warnings = parseSurefire(in.Reports, ls, in)
			run.Warnings = append(run.Warnings, warnings...)
		}
		if !r.found {
			continue
		}
		run.Formats = append(run.Formats, f)
		complete = complete && r.complete
		if r.complete {
			settle(r.suites, r.tests)
		}
		for _, t := range r.tests {
			tests[t.ID] = t
		}
		for _, s := range r.suites {
			suites[s.Name] = s
		}
	}
	if len(run.Formats) == 0 {
		return run
	}
	run.Complete = complete && !in.TimedOut && !run.Cut
	for _, t := range tests {
		run.Tests = append(run.Tests, t)
	}
	sort.Slice(run.Tests, func(i, j int) bool { return run.Tests[i].ID < run.Tests[j].ID })
	for _, s := range suites {
		run.Suites = append(run.Suites, s)
	}
	sort.Slice(run.Suites, func(i, j int) bool { return run.Suites[i].Name < run.Suites[j].Name })
	return run
}

// CommandFormats returns the test tools a shell command runs, in order: go
// test, pytest, jest, vitest, cargo test, and Surefire for mvn and gradle.
// It looks through env assignments and wrappers (env, time, timeout, npx,
// yarn, pnpm exec, poetry run, uv run, …) in each command of a list or
// pipeline; a command it does not know (make test, npm test, tox, a script)
// adds nothing.
func CommandFormats(command string) []Format {
	var out []Format
	for _, argv := range simpleCommands(command) {
		if f := toolOf(argv); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// toolOf returns the format of the test tool argv runs, or "".
func toolOf(argv []string) Format {
	argv = unwrap(argv)
	if len(argv) == 0 {
		return ""
	}
	prog := path.Base(argv[0])
	sub := ""
	if len(argv) > 1 {
		sub = argv[1]
	}
	switch {
	case prog == "go" && sub == "test":
		return GoTest
	case prog == "pytest" || prog == "py.test" || strings.HasPrefix(prog, "pytest-"):
		return Pytest
	case pythonRE.MatchString(prog) && sub == "-m" && len(argv) > 2 && argv[2] == "pytest":
		return Pytest
	case prog == "jest":
		return Jest
	case prog == "vitest":
		return Vitest
	case prog == "cargo":
		for _, a := range argv[1:] {
			if strings.HasPrefix(a, "+") {
				continue // a toolchain: cargo +nightly test
			}
			if a == "test" {
				return Cargo
			}
			break
		}
	case prog == "mvn" || prog == "mvnw" || prog == "mvnw.cmd" || prog == "gradle" || prog == "gradlew":
		return Surefire
	}
	return ""
}

var pythonRE = regexp.MustCompile(`^python(?:\d+(?:\.\d+)*)?$`)

// unwrap drops env assignments and the wrappers that run another command
// from the front of argv.
func unwrap(argv []string) []string {
	for len(argv) > 0 {
		a := argv[0]
		switch prog := path.Base(a); {
		case isAssignment(a):
			argv = argv[1:]
		case prog == "env" || prog == "time" || prog == "nice" || prog == "command" || prog == "exec" || prog == "npx" || prog == "bunx" || prog == "xvfb-run" || prog == "stdbuf" || prog == "unbuffer" || prog == "dotenv":
			argv = argv[1:]
			for len(argv) > 0 && (strings.HasPrefix(argv[0], "-") || isAssignment(argv[0])) {
				if argv[0] == "--" {
					argv = argv[1:]
					break
				}
				argv = argv[1:]
			}
		case prog == "timeout":
			argv = argv[1:]
			for len(argv) > 0 && strings.HasPrefix(argv[0], "-") {
				argv = argv[1:]
			}
			if len(argv) > 0 {
				argv = argv[1:] // the duration
			}
		case (prog == "poetry" || prog == "uv" || prog == "pipenv" || prog == "pdm" || prog == "hatch" || prog == "rye" || prog == "npm" || prog == "pnpm") && len(argv) > 1 && (argv[1] == "run" || argv[1] == "exec" || argv[1] == "dlx"):
			if (prog == "npm" || prog == "pnpm") && argv[1] == "run" {
				return argv // a package.json script: not known
			}
			argv = argv[2:]
			for len(argv) > 0 && strings.HasPrefix(argv[0], "-") {
				if argv[0] == "--" {
					argv = argv[1:]
					break
				}
				argv = argv[1:]
			}
		case (prog == "yarn" || prog == "pnpm" || prog == "bun") && len(argv) > 1 && (argv[1] == "jest" || argv[1] == "vitest"):
			argv = argv[1:]
		default:
			return argv
		}
	}
	return argv
}

var assignmentRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func isAssignment(s string) bool { return assignmentRE.MatchString(s) }

// outputFormats returns the tools whose marks the output has.
func outputFormats(ls []string) []Format {
	var goSeen, pySeen, jestFile, jestSum, viteFile, viteSum, cargoBlock, cargoSum bool
	for _, l := range ls {
		switch {
		case strings.HasPrefix(l, `{"`) && strings.Contains(l, `"Action":"`):
			goSeen = true
		case goPkgRE.MatchString(l) || goResultRE.MatchString(l):
			goSeen = true
		case pySessionRE.MatchString(l) || pySummaryRE.MatchString(l) && strings.HasPrefix(l, "="):
			pySeen = true
		case jestFileRE.MatchString(l):
			jestFile = true
		case jestSummaryRE.MatchString(l):
			jestSum = true
		case vitestFileRE.MatchString(l) || vitestTestRE.MatchString(l):
			viteFile = true
		case vitestSummaryRE.MatchString(l) || strings.HasPrefix(strings.TrimSpace(l), "Test Files "):
			viteSum = true
		case cargoBlockRE.MatchString(l) || cargoRunningRE.MatchString(l):
			cargoBlock = true
		case cargoResultRE.MatchString(l):
			cargoSum = true
		case strings.HasPrefix(l, `{"`) && strings.Contains(l, `"testResults"`):
			if strings.Contains(l, `"numRuntimeErrorTestSuites"`) {
				jestFile, jestSum = true, true
			} else {
				viteFile, viteSum = true, true
			}
		}
	}
	var out []Format
	if goSeen {
		out = append(out, GoTest)
	}
	if pySeen {
		out = append(out, Pytest)
	}
	if jestFile && jestSum {
		out = append(out, Jest)
	}
	if viteFile && viteSum {
		out = append(out, Vitest)
	}
	if cargoBlock && cargoSum {
		out = append(out, Cargo)
	}
	return out
}

// settle gives the suites of a complete run whose status the output left
// open the status of their tests: failed with a failed test, passed with a
// passed one, skipped when all were skipped.
func settle(suites []Suite, tests []Test) {
	st := map[string]Status{}
	for _, t := range tests {
		switch {
		case t.Status == Failed || st[t.Suite] == Failed:
			st[t.Suite] = Failed
		case t.Status == Passed || st[t.Suite] == Passed:
			st[t.Suite] = Passed
		default:
			st[t.Suite] = Skipped
		}
	}
	for i := range suites {
		if suites[i].Status == "" {
			suites[i].Status = st[suites[i].Name]
			if suites[i].Status == "" {
				suites[i].Status = Skipped
			}
		}
	}
}
