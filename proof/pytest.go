package proof

import (
	"path"
	"regexp"
	"strings"
)

var (
	pySessionRE = regexp.MustCompile(`^=+ test session starts =+$`)
	// pySectionRE matches a section rule: "===== FAILURES =====".
	pySectionRE = regexp.MustCompile(`^=+ (.+?) =+$`)
	// pySummaryRE matches the closing line, with or without rules (-q):
	// "==== 4 failed, 7 passed in 0.04s ====", "1 error in 0.07s".
	pySummaryRE = regexp.MustCompile(`^(?:=+ )?(?:\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?|rerun)(?:, )?)+ in [\d.]+s(?: \([^)]*\))?(?: =+)?$|^=+ no tests ran in [\d.]+s =+$`)
	// pyInterruptRE matches "!!!! Interrupted: 1 error during collection
	// !!!!" and "!!!! stopping after 1 failures !!!!".
	pyInterruptRE = regexp.MustCompile(`^!{3,} .* !{3,}$`)
	// pyProgressRE matches a file's progress line: "tests/test_a.py .F.sx
	// [ 50%]".
	pyProgressRE = regexp.MustCompile(`^(\S+\.py) ([.FEsxXR]+)\s*(?:\[\s*\d+%\])?$`)
	// pyProgressMoreRE matches the wrapped rest of a long progress line.
	pyProgressMoreRE = regexp.MustCompile(`^([.FEsxXR]+)\s*(?:\[\s*\d+%\])?$`)
	// pyXdistRE matches pytest-xdist's -v line: "[gw0] [ 50%] PASSED id".
	pyXdistRE = regexp.MustCompile(`^\[gw\d+\] (?:\[\s*\d+%\] )?(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (.+)$`)
	// pyPercentRE matches the progress mark that ends a -v line.
	pyPercentRE = regexp.MustCompile(`\s+\[\s*\d+%\]$`)
	// pyBlockRE matches the title of a failure's block: "____ test_x ____".
	pyBlockRE = regexp.MustCompile(`^_{3,} (.+?) _{3,}$`)
	// pyFrameRE matches a traceback frame: "tests/test_a.py:3: in <module>"
	// or the last line of a failure: "tests/test_a.py:11: AssertionError".
	pyFrameRE = regexp.MustCompile(`^(\S+\.py):(\d+): (.*)$`)
	// pyFileRE matches the frames Python prints itself: File "x.py", line 3.
	pyFileRE = regexp.MustCompile(`File "([^"]+\.py)", line (\d+)`)
)

var pyStatus = map[string]Status{
	"PASSED": Passed, "XPASS": Passed,
	"FAILED": Failed, "ERROR": Failed,
	"SKIPPED": Skipped, "XFAIL": Skipped,
}

// pyBlock is one block of the FAILURES or ERRORS section.
type pyBlock struct {
	title string
	body  []string
}

// pytestParser reads pytest's output: default, -v, -rA, -q, and -v with
// pytest-xdist.
type pytestParser struct {
	dir       string
	c         *collector
	found     bool
	cut       bool
	ended     bool // saw the closing line
	stopped   bool // interrupted or stopped early
	section   string
	blocks    []*pyBlock
	block     *pyBlock
	progress  map[string]string // file → its progress characters
	lastFile  string
	summaries map[string]string // id → message of its summary line
	pending   string            // the -v test whose status has not come yet
}

func parsePytest(ls []string, dir string) results {
	p := &pytestParser{dir: dir, c: newCollector(), progress: map[string]string{}, summaries: map[string]string{}}
	for _, l := range ls {
		if l == elided {
			p.cut, p.block, p.lastFile, p.pending = true, nil, "", ""
			continue
		}
		p.line(l)
	}
	p.finish()
	ts, ss := p.c.results()
	complete := p.ended && !p.cut && !p.stopped
	if complete {
		for i := range ss {
			if ss[i].Status == "" {
				ss[i].Status = Passed
			}
		}
	}
	return results{tests: ts, suites: ss, complete: complete, found: p.found}
}

func (p *pytestParser) line(l string) {
	switch {
	case pySessionRE.MatchString(l):
		p.found, p.section = true, ""
		return
	case pySummaryRE.MatchString(l):
		p.found, p.ended, p.block = true, true, nil
		return
	case pyInterruptRE.MatchString(l):
		p.stopped, p.block = true, nil
		return
	}
	if m := pySectionRE.FindStringSubmatch(l); m != nil && isPySection(m[1]) {
		p.section, p.block = m[1], nil
		return
	}
	switch p.section {
	case "FAILURES", "ERRORS":
		if m := pyBlockRE.FindStringSubmatch(l); m != nil {
			p.block = &pyBlock{title: m[1]}
			p.blocks = append(p.blocks, p.block)
			return
		}
		if p.block != nil {
			p.block.body = append(p.block.body, l)
		}
		return
	case "short test summary info":
		p.summaryLine(l)
		return
	case "":
	default:
		return // warnings, PASSES and the like
	}
	if m := pyProgressRE.FindStringSubmatch(l); m != nil {
		p.found = true
		p.lastFile = m[1]
		p.progress[m[1]] += m[2]
		p.c.suite(m[1])
		return
	}
	if m := pyProgressMoreRE.FindStringSubmatch(l); m != nil && p.lastFile != "" {
		p.progress[p.lastFile] += m[1]
		return
	}
	if m := pyXdistRE.FindStringSubmatch(l); m != nil {
		p.result(strings.TrimSpace(m[2]), m[1])
		return
	}
	l = pyPercentRE.ReplaceAllString(l, "")
	if id, rest, ok := pyNodeID(l); ok && strings.Contains(id, "::") {
		word, _, _ := strings.Cut(rest, " ")
		if _, known := pyStatus[word]; known {
			p.result(id, word)
			p.pending = ""
			return
		}
		// The test printed (pytest -s) before its status: the status comes
		// at the end of a later line.
		p.pending = id
		l = rest
	}
	if p.pending != "" {
		fields := strings.Fields(l)
		for _, w := range []string{firstField(fields), lastField(fields)} {
			if _, known := pyStatus[w]; known {
				p.result(p.pending, w)
				p.pending = ""
				return
			}
		}
	}
}

func firstField(fs []string) string {
	if len(fs) == 0 {
		return ""
	}
	return fs[0]
}

func lastField(fs []string) string {
	if len(fs) == 0 {
		return ""
	}
	return fs[len(fs)-1]
}

func isPySection(s string) bool {
	switch s {
	case "FAILURES", "ERRORS", "PASSES", "short test summary info", "warnings summary", "XFAILURES", "XPASSES":
		return true
	}
	return false
}

// pyNodeID splits l into a test id ("file.py::name[params]") and the rest
// of the line. An id ends at the first space outside its brackets.
func pyNodeID(l string) (id, rest string, ok bool) {
	depth := 0
	for i, r := range l {
		switch r {
		case '[':
			depth++
		case ']':
			if depth > 0 {
				depth--
			}
		case ' ':
			if depth == 0 {
				id, rest = l[:i], l[i+1:]
				return id, rest, isPyID(id)
			}
		}
	}
	return l, "", isPyID(l)
}

// isPyID reports whether id looks like a pytest node id or a test file.
func isPyID(id string) bool {
	file, _, _ := strings.Cut(id, "::")
	return strings.HasSuffix(file, ".py") && !strings.ContainsAny(file, " \t")
}

func (p *pytestParser) summaryLine(l string) {
	word, rest, ok := strings.Cut(l, " ")
	if !ok {
		return
	}
	st, known := pyStatus[word]
	if !known || st == Skipped && strings.HasPrefix(rest, "[") {
		return // "SKIPPED [1] file.py:24: reason" names a place, not a test
	}
	id, more, ok := pyNodeID(rest)
	if !ok {
		return
	}
	p.found = true
	if !strings.Contains(id, "::") {
		if word == "ERROR" {
			s := p.c.suite(id)
			s.Error = "collection error"
		}
		return
	}
	p.result(id, word)
	if msg, ok := strings.CutPrefix(more, "- "); ok {
		p.summaries[id] = msg
	}
}

// result records that test id ended with pytest's word for it.
func (p *pytestParser) result(id, word string) {
	p.found = true
	file, name, _ := strings.Cut(id, "::")
	p.c.suite(file)
	t := p.c.test(id, file, name)
	st := pyStatus[word]
	if t.Status == Failed {
		return // a teardown error after a pass, or the summary repeating it
	}
	t.Status = st
}

// finish gives failed tests their messages and suites their statuses.
func (p *pytestParser) finish() {
	for _, b := range p.blocks {
		if f, ok := strings.CutPrefix(b.title, "ERROR collecting "); ok {
			s := p.c.suite(f)
			s.Error = "collection error"
			s.Message = pyMessage(b.body)
			p.pyPlaces(s, b.body)
		}
	}
	for _, id := range p.c.torder {
		t := p.c.tests[id]
		if t.Status != Failed {
			continue
		}
		if b := p.blockFor(t); b != nil {
			t.Message = pyMessage(b.body)
		}
		if t.Message == "" {
			t.Message = p.summaries[id]
		}
	}
	for file, chars := range p.progress {
		s := p.c.suite(file)
		switch {
		case strings.ContainsAny(chars, "FE"):
			s.Status = Failed
		case strings.Trim(chars, "sx") == "":
			s.Status = Skipped
		default:
			s.Status = Passed
		}
	}
	if p.cut || p.stopped {
		return
	}
	// Files listed only by -v lines: their status follows from their tests.
	seen := map[string]bool{}
	for _, id := range p.c.torder {
		t := p.c.tests[id]
		if _, ok := p.progress[t.Suite]; ok {
			continue
		}
		s := p.c.suite(t.Suite)
		if !seen[t.Suite] {
			seen[t.Suite] = true
			s.Status = Skipped
		}
		switch {
		case t.Status == Failed:
			s.Status = Failed
		case t.Status == Passed && s.Status == Skipped:
			s.Status = Passed
		}
	}
}

// blockFor returns the FAILURES or ERRORS block of test t: pytest titles a
// block with the test's name, its class joined with a dot, and prefers the
// block whose body names t's file.
func (p *pytestParser) blockFor(t *Test) *pyBlock {
	name, params, _ := strings.Cut(t.Name, "[")
	head := strings.ReplaceAll(name, "::", ".")
	if params != "" {
		head += "[" + params
	}
	var match *pyBlock
	for _, b := range p.blocks {
		title := b.title
		for _, pre := range []string{"ERROR at setup of ", "ERROR at teardown of "} {
			title = strings.TrimPrefix(title, pre)
		}
		if title != head {
			continue
		}
		for _, l := range b.body {
			if m := pyFrameRE.FindStringSubmatch(l); m != nil && m[1] == t.Suite {
				return b
			}
		}
		if match == nil {
			match = b
		}
	}
	return match
}

// pyMessage keeps a failure block's "E" lines and the place it failed;
// without "E" lines, its last lines.
func pyMessage(body []string) string {
	var es []string
	place := ""
	for _, l := range body {
		if rest, ok := strings.CutPrefix(l, "E "); ok || l == "E" {
			es = append(es, rest)
			continue
		}
		if pyFrameRE.MatchString(l) {
			place = l
		}
	}
	if len(es) == 0 {
		if len(body) > MessageLines {
			body = body[len(body)-MessageLines:]
		}
		return message(body)
	}
	if len(es) > MessageLines-1 {
		es = es[:MessageLines-1]
	}
	es = dedent(es)
	if place != "" {
		es = append(es, place)
	}
	return message(es)
}

// pyPlaces records the repository's places a traceback passes through.
func (p *pytestParser) pyPlaces(s *Suite, body []string) {
	for _, l := range body {
		if m := pyFrameRE.FindStringSubmatch(l); m != nil {
			s.addPlace(p.dir, m[1], atoi(m[2]))
		}
		for _, m := range pyFileRE.FindAllStringSubmatch(l, -1) {
			s.addPlace(p.dir, m[1], atoi(m[2]))
		}
	}
}

// relPath returns p relative to dir, the directory the command ran in; ok
// is false for a path outside it (or an absolute path when dir is empty).
func relPath(dir, p string) (string, bool) {
	p = strings.TrimPrefix(p, "file://")
	if path.IsAbs(p) {
		dir = strings.TrimSuffix(dir, "/")
		rest, ok := strings.CutPrefix(p, dir+"/")
		if dir == "" || !ok {
			return "", false
		}
		p = rest
	}
	p = path.Clean(p)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}
