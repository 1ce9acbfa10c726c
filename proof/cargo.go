package proof

import (
	"path"
	"regexp"
	"strings"
)

var (
	// cargoRunningRE matches cargo's line for a test binary: "Running
	// unittests src/lib.rs (target/debug/deps/calc-1cd44e4e967ddba4)", or,
	// before cargo 1.52, "Running target/debug/deps/calc-1cd44e4e".
	cargoRunningRE = regexp.MustCompile(`^\s+Running (?:(?:unittests|tests|benches|examples) )?(\S+)(?: \((\S+)\))?$`)
	cargoDocRE     = regexp.MustCompile(`^\s+Doc-tests (\S+)$`)
	cargoBlockRE   = regexp.MustCompile(`^running \d+ tests?$`)
	// cargoTestRE matches libtest's line for a test: "test a::b ... ok".
	cargoTestRE   = regexp.MustCompile(`^test (.+?) \.\.\. (ok|FAILED|ignored(?:, .*)?)$`)
	cargoOutRE    = regexp.MustCompile(`^---- (.+?) std(?:out|err) ----$`)
	cargoResultRE = regexp.MustCompile(`^test result: (ok|FAILED)\. `)
	// cargoHashRE matches the hash cargo appends to a test binary's name.
	cargoHashRE = regexp.MustCompile(`-[0-9a-f]{16}(?:\.exe)?$`)
	// cargoCompileRE matches cargo's line for a target that did not build:
	// "error: could not compile `calc` (test "integration") due to 1
	// previous error".
	cargoCompileRE = regexp.MustCompile("^error: could not compile `([^`]+)`(?: \\(([^)]*)\\))?")
	cargoErrorRE   = regexp.MustCompile(`^error(?:\[E\d+\])?: `)
	cargoPosRE     = regexp.MustCompile(`^\s*--> ([^\s:]+):(\d+):\d+$`)
	// cargoStopRE matches the error cargo ends a run with at the first
	// failing binary; cargoAllRE the one that ends a --no-fail-fast run.
	cargoStopRE = regexp.MustCompile(`^error: (?:test|doctest) failed, to rerun pass `)
	cargoAllRE  = regexp.MustCompile(`^error: \d+ targets? failed:$`)
)

// cargoParser reads the output of cargo test: several test binaries, each
// with libtest's output, doc tests, and compiler errors.
type cargoParser struct {
	c       *collector
	found   bool
	cut     bool
	open    bool // inside a "running N tests" block
	broken  bool // a target did not build
	stopped bool
	all     bool
	suite   string
	out     *Test // the failure whose output is being read
	outBody []string
	errs    []string // compiler errors since the last target line
	inErr   bool
	loose   []string // lines of the open block no test claims
}

func parseCargo(ls []string) results {
	p := &cargoParser{c: newCollector()}
	for _, l := range ls {
		if l == elided {
			p.endOut()
			p.cut, p.open, p.inErr, p.suite = true, false, false, ""
			continue
		}
		p.line(l)
	}
	open := p.open
	p.crashed()
	ts, ss := p.c.results()
	complete := !p.cut && !open && !p.broken && (!p.stopped || p.all)
	return results{tests: ts, suites: ss, complete: complete, found: p.found}
}

// crashed ends a block that had no "test result" line: the test binary
// died before its tests ended.
func (p *cargoParser) crashed() {
	p.endOut()
	if !p.open {
		return
	}
	s := p.c.suite(p.suite)
	s.Status, s.Error, s.Message = Failed, "exited", message(p.loose)
	p.open, p.loose = false, nil
}

// binSuite names a test binary's suite: its source and its name without
// cargo's hash, "src/lib.rs (calc)", or the name alone before cargo 1.52.
func binSuite(src, bin string) string {
	if bin == "" {
		return cargoHashRE.ReplaceAllString(path.Base(src), "")
	}
	return src + " (" + cargoHashRE.ReplaceAllString(path.Base(bin), "") + ")"
}

func (p *cargoParser) line(l string) {
	if m := cargoRunningRE.FindStringSubmatch(l); m != nil {
		p.crashed()
		p.found, p.suite, p.inErr = true, binSuite(m[1], m[2]), false
		p.c.suite(p.suite)
		return
	}
	if m := cargoDocRE.FindStringSubmatch(l); m != nil {
		p.crashed()
		p.found, p.suite, p.inErr = true, "doc-tests ("+m[1]+")", false
		p.c.suite(p.suite)
		return
	}
	if m := cargoCompileRE.FindStringSubmatch(l); m != nil {
		p.found, p.broken, p.inErr = true, true, false
		name := m[1]
		if m[2] != "" {
			name += " (" + m[2] + ")"
		}
		s := p.c.suite(name)
		s.Status, s.Error = Failed, "build failed"
		s.Message = message(p.errs)
		for _, e := range p.errs {
			if m := cargoPosRE.FindStringSubmatch(e); m != nil {
				s.addPlace("", m[1], atoi(m[2]))
			}
		}
		p.errs = nil
		return
	}
	switch {
	case cargoStopRE.MatchString(l):
		p.stopped = true
		return
	case cargoAllRE.MatchString(l):
		p.all = true
		return
	case cargoErrorRE.MatchString(l):
		p.inErr = true
	case strings.HasPrefix(l, "warning") || strings.TrimSpace(l) == "" && p.inErr:
		p.inErr = false
	}
	if p.inErr {
		p.errs = append(p.errs, l)
		return
	}
	if p.suite == "" {
		return
	}
	if cargoBlockRE.MatchString(l) {
		p.open, p.loose = true, nil
		return
	}
	if m := cargoTestRE.FindStringSubmatch(l); m != nil && p.open {
		name := strings.TrimSuffix(m[1], " - should panic")
		t := p.c.test(p.suite+" "+name, p.suite, name)
		switch {
		case m[2] == "ok":
			t.Status = Passed
		case m[2] == "FAILED":
			t.Status = Failed
		default:
			t.Status = Skipped
		}
		return
	}
	if m := cargoOutRE.FindStringSubmatch(l); m != nil && p.open {
		p.endOut()
		name := strings.TrimSuffix(m[1], " - should panic")
		if t, ok := p.c.tests[p.suite+" "+name]; ok {
			p.out = t
		}
		return
	}
	if m := cargoResultRE.FindStringSubmatch(l); m != nil {
		p.endOut()
		p.open = false
		s := p.c.suite(p.suite)
		if m[1] == "ok" {
			s.Status = Passed
		} else {
			s.Status = Failed
		}
		return
	}
	if l == "failures:" {
		p.endOut()
		return
	}
	switch {
	case p.out != nil:
		p.outBody = append(p.outBody, l)
	case p.open:
		p.loose = append(p.loose, l)
	}
}

// endOut gives the failure being read its message: the panic and its
// text, without the backtrace.
func (p *cargoParser) endOut() {
	if p.out == nil {
		return
	}
	var kept []string
	skip := false
	for _, l := range p.outBody {
		switch {
		case strings.HasPrefix(l, "stack backtrace:"):
			skip = true
		case strings.HasPrefix(l, "note: "):
			skip = false
			continue
		}
		if !skip {
			kept = append(kept, l)
		}
	}
	p.out.Message = message(kept)
	p.out, p.outBody = nil, nil
}
