package proof

import (
	"encoding/json"
	"regexp"
	"strings"
)

var (
	// goPkgRE matches go test's line for a package: "ok  \tpkg\t0.01s",
	// "FAIL\tpkg\t0.1s", "FAIL\tpkg [build failed]", "?   \tpkg\t[no test
	// files]".
	goPkgRE = regexp.MustCompile(`^(ok|FAIL|\?) *\t(\S+)(?: \[(build failed|setup failed)\])?(?:\t(.*))?$`)
	// goHeaderRE matches "=== RUN   TestX" and its kin.
	goHeaderRE = regexp.MustCompile(`^=== (RUN|CONT|NAME|PAUSE)\s+(\S+)$`)
	// goResultRE matches "--- FAIL: TestX/sub (0.00s)", indented by depth.
	goResultRE = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \((?:[\d.]+s|unknown)\)$`)
	// goBuildRE matches the header of a package's build output: "# pkg",
	// "# pkg [pkg.test]".
	goBuildRE = regexp.MustCompile(`^# (\S+)(?: \[(\S+)\])?$`)
	// goPosRE finds the file of a compiler or vet error: "a/b_test.go:6:5:".
	goPosRE = regexp.MustCompile(`(?:^|\s)(?:vet: )?([^\s:]+\.go):(\d+)(?::\d+)?:`)
	// goTimeoutRE matches the panic of a test binary that ran out of time.
	goTimeoutRE = regexp.MustCompile(`^panic: test timed out after \S+`)
	// goRunningRE matches a test named under "running tests:".
	goRunningRE = regexp.MustCompile(`^\t\t(\S+) \([^)]*\)$`)
)

// goEvent is one line of `go test -json` (cmd/test2json), with the build
// events of Go 1.24 and later.
type goEvent struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string
	FailedBuild string
}

// goTest is a test of the package whose lines are being read.
type goTest struct {
	name   string
	status Status
	out    []string
}

// goParser reads go test's output: plain, -v and -json, the latter with
// plain lines (build errors of older Go versions) mixed in.
type goParser struct {
	c     *collector
	found bool
	cut   bool

	// The block of plain lines before the next package line.
	block  map[string]*goTest
	border []string
	cur    *goTest
	loose  []string // block lines no test claims
	// build output by package; building names the package whose build
	// lines are being read.
	build    map[string][]string
	building string
	// timeout is the panic message of a time-out; the tests named after it
	// ran out of time.
	timeout string

	// -json: tests started and not ended, with their output, and the
	// output of each package outside its tests.
	jtests   map[string]*goTest
	jorder   []string
	jpkgOut  map[string][]string
	jstarted map[string]bool
	jended   map[string]bool
	// failed marks the packages with a failed test.
	failed map[string]bool
	// blockCut is set while the block being read lost lines to a cut;
	// jcut marks the -json packages that did.
	blockCut bool
	afterCut bool
	jcut     map[string]bool
}

func parseGo(ls []string) results {
	p := &goParser{
		c: newCollector(), block: map[string]*goTest{}, build: map[string][]string{},
		jtests: map[string]*goTest{}, jpkgOut: map[string][]string{},
		jstarted: map[string]bool{}, jended: map[string]bool{}, failed: map[string]bool{}, jcut: map[string]bool{},
	}
	for _, l := range ls {
		if l == elided {
			p.elision()
			continue
		}
		if strings.HasPrefix(l, "{") {
			var ev goEvent
			if json.Unmarshal([]byte(l), &ev) == nil && ev.Action != "" {
				p.found = true
				p.event(ev)
				continue
			}
		}
		p.line(l)
	}
	complete := !p.cut && len(p.border) == 0
	for pkg := range p.jstarted {
		if !p.jended[pkg] {
			complete = false
		}
	}
	ts, ss := p.c.results()
	return results{tests: ts, suites: ss, complete: complete, found: p.found}
}

// elision forgets the state a cut makes unreliable: the tests of the block
// being read (their package line may be gone), the test whose output was
// being read.
func (p *goParser) elision() {
	p.cut, p.blockCut, p.afterCut = true, true, true
	p.block, p.border, p.cur, p.loose = map[string]*goTest{}, nil, nil, nil
	for pkg := range p.jstarted {
		if !p.jended[pkg] {
			p.jcut[pkg] = true
		}
	}
	p.building, p.timeout = "", ""
	for _, t := range p.jtests {
		t.out = append(t.out, "[…]")
	}
}

func (p *goParser) blockTest(name string) *goTest {
	if t, ok := p.block[name]; ok {
		return t
	}
	t := &goTest{name: name}
	p.block[name] = t
	p.border = append(p.border, name)
	return t
}

func (p *goParser) line(l string) {
	if m := goHeaderRE.FindStringSubmatch(l); m != nil {
		p.found = true
		p.building = ""
		t := p.blockTest(m[2])
		if m[1] != "PAUSE" {
			p.cur = t
		}
		return
	}
	if m := goResultRE.FindStringSubmatch(l); m != nil {
		p.found = true
		p.building = ""
		t := p.blockTest(m[2])
		t.status = map[string]Status{"PASS": Passed, "FAIL": Failed, "SKIP": Skipped}[m[1]]
		p.cur = t
		return
	}
	if m := goPkgRE.FindStringSubmatch(l); m != nil {
		p.found = true
		p.pkgLine(m[1], m[2], m[3], m[4])
		return
	}
	if m := goBuildRE.FindStringSubmatch(l); m != nil {
		p.building = buildPkg(m[1], m[2])
		p.cur = nil
		return
	}
	if l == "PASS" || l == "FAIL" {
		p.cur = nil
		return
	}
	if p.building != "" {
		p.build[p.building] = append(p.build[p.building], l)
		return
	}
	if goTimeoutRE.MatchString(l) {
		p.timeout = strings.TrimPrefix(l, "panic: ")
	} else if p.timeout != "" {
		if m := goRunningRE.FindStringSubmatch(l); m != nil {
			t := p.blockTest(m[1])
			t.status = Failed
			t.out = append(t.out, p.timeout)
			return
		}
	}
	if p.cur != nil && p.timeout == "" {
		p.cur.out = append(p.cur.out, l)
		return
	}
	p.loose = append(p.loose, l)
}

// buildPkg returns the package a build header names: the package under
// test for "pkg_test [pkg.test]".
func buildPkg(first, bracket string) string {
	if b, ok := strings.CutSuffix(bracket, ".test"); ok {
		return b
	}
	return first
}

// pkgLine ends the block of package pkg.
func (p *goParser) pkgLine(verdict, pkg, broke, rest string) {
	s := p.c.suite(pkg)
	switch {
	case broke != "":
		s.Status, s.Error = Failed, broke
		s.Message = message(p.build[pkg])
		goPlaces(s, p.build[pkg])
	case verdict == "?":
		s.Status = Skipped
	case verdict == "ok" && strings.Contains(rest, "[no tests to run]"):
		s.Status = Skipped
	case verdict == "ok":
		s.Status = Passed
	default:
		s.Status = Failed
	}
	failedTest := false
	for _, name := range p.border {
		t := p.block[name]
		if t.status == "" && verdict == "FAIL" {
			// Started and never ended: the binary died while it ran.
			t.status = Failed
			if len(t.out) == 0 {
				t.out = append(t.out, "the test binary ended before this test did")
			}
		}
		if t.status == "" {
			continue
		}
		p.add(pkg, t)
		failedTest = failedTest || t.status == Failed
	}
	if verdict == "FAIL" && broke == "" && !failedTest && !p.blockCut {
		s.Error, s.Message = "exited", message(p.loose)
	}
	p.block, p.border, p.cur, p.loose, p.timeout = map[string]*goTest{}, nil, nil, nil, ""
	p.blockCut = false
	p.building = ""
}

// add records test t of package pkg.
func (p *goParser) add(pkg string, t *goTest) {
	r := p.c.test(pkg+" "+t.name, pkg, t.name)
	r.Status = t.status
	if t.status == Failed {
		p.failed[pkg] = true
		r.Message = message(goMessage(t.out))
	}
}

// goMessage drops go test's own header lines from a test's output, and
// from a goroutine trace the frames of the runtime and the testing
// package, keeping the test's own.
func goMessage(out []string) []string {
	var kept []string
	inTrace, skip := false, false
	for _, l := range out {
		switch {
		case goHeaderRE.MatchString(l) || goResultRE.MatchString(l):
			continue
		case strings.HasPrefix(l, "goroutine ") && strings.HasSuffix(l, "]:"):
			inTrace = true
			continue
		case !inTrace:
			kept = append(kept, l)
			continue
		case l == "":
			continue
		case !strings.HasPrefix(l, "\t"):
			skip = false
			for _, pre := range []string{"testing.", "runtime.", "panic(", "created by ", "time.", "sync.", "reflect.", "main.main(", "os.", "syscall."} {
				skip = skip || strings.HasPrefix(l, pre)
			}
		}
		if !skip {
			kept = append(kept, l)
		}
	}
	return kept
}

// goPlaces records the positions build output points at; go prints them
// relative to the directory go test ran in.
func goPlaces(s *Suite, out []string) {
	for _, l := range out {
		for _, m := range goPosRE.FindAllStringSubmatch(l, -1) {
			s.addPlace("", m[1], atoi(m[2]))
		}
	}
}

func (p *goParser) event(ev goEvent) {
	switch ev.Action {
	case "build-output":
		pkg := importPathPkg(ev.ImportPath)
		if l := strings.TrimSuffix(ev.Output, "\n"); !goBuildRE.MatchString(l) {
			p.build[pkg] = append(p.build[pkg], l)
		}
		return
	case "build-fail":
		return
	}
	if ev.Package == "" {
		return
	}
	if ev.Action == "start" {
		p.jstarted[ev.Package] = true
	} else if !p.jstarted[ev.Package] && p.afterCut {
		p.jcut[ev.Package] = true // its start was cut
	}
	key := ev.Package + " " + ev.Test
	if ev.Test != "" {
		t, ok := p.jtests[key]
		if !ok {
			t = &goTest{name: ev.Test}
			p.jtests[key] = t
			p.jorder = append(p.jorder, key)
		}
		switch ev.Action {
		case "output":
			t.out = append(t.out, strings.TrimSuffix(ev.Output, "\n"))
		case "pass", "fail", "skip":
			t.status = map[string]Status{"pass": Passed, "fail": Failed, "skip": Skipped}[ev.Action]
			p.add(ev.Package, t)
			delete(p.jtests, key)
		}
		return
	}
	switch ev.Action {
	case "output":
		p.jpkgOut[ev.Package] = append(p.jpkgOut[ev.Package], strings.TrimSuffix(ev.Output, "\n"))
	case "pass", "fail", "skip":
		p.jended[ev.Package] = true
		p.jsonPkgEnd(ev)
	}
}

// importPathPkg returns the package of a build event's ImportPath:
// "pkg [pkg.test]" → pkg.
func importPathPkg(ip string) string {
	first, bracket, _ := strings.Cut(ip, " [")
	return buildPkg(first, strings.TrimSuffix(bracket, "]"))
}

// jsonPkgEnd ends package ev.Package of a -json run.
func (p *goParser) jsonPkgEnd(ev goEvent) {
	pkg := ev.Package
	s := p.c.suite(pkg)
	out := p.jpkgOut[pkg]
	switch ev.Action {
	case "pass":
		s.Status = Passed
		if noTests(out) {
			s.Status = Skipped
		}
	case "skip":
		s.Status = Skipped
	case "fail":
		s.Status = Failed
		if ev.FailedBuild != "" || buildFailed(out) {
			build := p.build[importPathPkg(ev.FailedBuild)]
			if ev.FailedBuild == "" {
				build = p.build[pkg]
			}
			s.Error = "build failed"
			if setupFailed(out) {
				s.Error = "setup failed"
			}
			s.Message = message(build)
			goPlaces(s, build)
			break
		}
	}
	failedTest := false
	for _, key := range p.jorder {
		t, ok := p.jtests[key]
		if !ok || !strings.HasPrefix(key, pkg+" ") {
			continue
		}
		delete(p.jtests, key)
		if ev.Action != "fail" || p.jcut[pkg] {
			continue // the test's end may have been cut
		}
		t.status = Failed
		if len(goMessage(t.out)) == 0 {
			t.out = append(t.out, "the test binary ended before this test did")
		}
		p.add(pkg, t)
		failedTest = true
	}
	failedTest = failedTest || p.failed[pkg]
	if ev.Action == "fail" && s.Error == "" && !failedTest && !p.jcut[pkg] {
		var loose []string
		for _, l := range out {
			if !goPkgRE.MatchString(l) && l != "FAIL" {
				loose = append(loose, l)
			}
		}
		s.Error, s.Message = "exited", message(loose)
	}
}

func noTests(out []string) bool {
	for _, l := range out {
		if strings.Contains(l, "[no tests to run]") || strings.Contains(l, "[no test files]") {
			return true
		}
	}
	return false
}

func buildFailed(out []string) bool {
	for _, l := range out {
		if m := goPkgRE.FindStringSubmatch(l); m != nil && m[3] != "" {
			return true
		}
	}
	return false
}

func setupFailed(out []string) bool {
	for _, l := range out {
		if m := goPkgRE.FindStringSubmatch(l); m != nil && m[3] == "setup failed" {
			return true
		}
	}
	return false
}
