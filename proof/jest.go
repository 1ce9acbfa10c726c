package proof

import (
	"encoding/json"
	"regexp"
	"strings"
)

var (
	// jestFileRE matches Jest's line for a test file: "PASS src/a.test.js",
	// "FAIL src/b.test.js (5.2 s)".
	jestFileRE = regexp.MustCompile(`^(PASS|FAIL) (\S+)(?: \([\d.]+ m?s\))?$`)
	// jestTestRE matches a test of --verbose: "    ✓ adds (3 ms)".
	jestTestRE = regexp.MustCompile(`^( +)(✓|✕|√|×|○|✎) (?:(skipped|todo) )?(.*?)(?: \(\d+(?:\.\d+)? ?m?s\))?$`)
	// jestGroupRE matches a describe block's title in --verbose.
	jestGroupRE = regexp.MustCompile(`^( +)(\S.*)$`)
	// jestFailRE matches the title of a failure: "  ● add › is wrong".
	jestFailRE = regexp.MustCompile(`^  ● (.+)$`)
	// jestCodeRE matches a line of a code frame: "    >  8 |   expect(…)".
	jestCodeRE = regexp.MustCompile(`^\s*(?:>\s*)?\d+ \|`)
	// jsAtRE finds the file of a stack frame: "at f (src/a.test.js:8:23)"
	// or "at src/a.test.js:8:23".
	jsAtRE = regexp.MustCompile(`\bat (?:.*\()?((?:file://)?[^\s()]+?):(\d+):\d+\)?$`)
	// jsImportedRE finds the file an import failed in: "imported from
	// /w/src/a.test.js", "from 'src/a.test.js'".
	jsImportedRE = regexp.MustCompile(`(?:imported from|from) '?((?:file://)?[^\s']+\.[cm]?[jt]sx?)'?`)
	// jestSummaryRE matches Jest's closing count of tests.
	jestSummaryRE = regexp.MustCompile(`^Tests:\s+.*\d+ total$`)

	// vitestFileRE matches Vitest's line for a file: " ✓ src/a.test.js (3
	// tests) 2ms", " ❯ src/b.test.js (2 tests | 1 failed) 4ms".
	vitestFileRE = regexp.MustCompile(`^ (✓|❯|×|↓) (\S+) \((\d+) tests?(?: \|[^)]*)?\)(?: \d+(?:\.\d+)?m?s)?$`)
	// vitestTestRE matches a test of the verbose reporter: " ✓ src/a.test.js
	// > add > adds 8ms".
	vitestTestRE = regexp.MustCompile(`^ +(✓|×|↓|□|✗) (\S+) > (.+?)(?: \d+(?:\.\d+)?m?s)?$`)
	// vitestFailRE matches a failure's title: " FAIL  src/a.test.js > add >
	// is wrong" or, for a file that did not run, " FAIL  src/b.test.js [
	// src/b.test.js ]".
	vitestFailRE = regexp.MustCompile(`^ FAIL  (\S+?)(?: > (.+?)| \[ .+ \])?$`)
	// vitestRuleRE matches the rules between failures: "⎯⎯⎯[1/4]⎯".
	vitestRuleRE = regexp.MustCompile(`^⎯{3,}`)
	// vitestSummaryRE matches Vitest's closing count of tests.
	vitestSummaryRE = regexp.MustCompile(`^\s+Tests\s+.*\(\d+\)$`)
)

var jsStatus = map[string]Status{
	"✓": Passed, "√": Passed,
	"✕": Failed, "×": Failed, "✗": Failed,
	"○": Skipped, "✎": Skipped, "↓": Skipped, "□": Skipped,
}

// jsPlaces records the repository's places a JavaScript error points
// at, outside node_modules.
func jsPlaces(s *Suite, dir string, body []string) {
	add := func(f string, line int) {
		if !strings.Contains(f, "node_modules/") && !strings.HasPrefix(f, "node:") {
			s.addPlace(dir, f, line)
		}
	}
	for _, l := range body {
		if m := jsAtRE.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			add(m[1], atoi(m[2]))
		}
		for _, m := range jsImportedRE.FindAllStringSubmatch(l, -1) {
			add(m[1], 0)
		}
	}
}

// jestMessage keeps a Jest or Vitest failure's text up to its code frame,
// and the first stack frame outside node_modules.
func jestMessage(body []string) string {
	var kept []string
	frame, anyFrame := "", ""
	inCode := false
	for _, l := range body {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "● "):
		case jestCodeRE.MatchString(l) || inCode && t != "" && strings.Contains(l, "|"):
			inCode = true
		case strings.HasPrefix(t, "at ") || strings.HasPrefix(t, "❯ "):
			if anyFrame == "" {
				anyFrame = t
			}
			if frame == "" && !strings.Contains(t, "node_modules/") {
				frame = t
			}
		case !inCode:
			kept = append(kept, l)
		}
	}
	if frame == "" {
		frame = anyFrame
	}
	kept = dedent(trimBlank(kept))
	if frame != "" {
		kept = append(kept, "", frame)
	}
	return message(kept)
}

func trimBlank(ls []string) []string {
	for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1]) == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// jestParser reads Jest's default and --verbose reporters.
type jestParser struct {
	dir    string
	c      *collector
	found  bool
	cut    bool
	ended  bool
	file   string
	groups []string // describe titles by depth
	fail   *Test    // the failure whose text is being read
	suite  *Suite   // the suite whose "failed to run" text is being read
	body   []string
}

func parseJest(ls []string, dir string) results {
	if r, ok := parseJSReport(ls, dir); ok {
		return r
	}
	p := &jestParser{dir: dir, c: newCollector()}
	for _, l := range ls {
		if l == elided {
			p.flush()
			p.cut, p.file = true, ""
			continue
		}
		p.line(l)
	}
	p.flush()
	ts, ss := p.c.results()
	return results{tests: ts, suites: ss, complete: p.ended && !p.cut, found: p.found}
}

func (p *jestParser) line(l string) {
	if m := jestFileRE.FindStringSubmatch(l); m != nil {
		p.flush()
		p.found, p.file, p.groups = true, m[2], nil
		s := p.c.suite(m[2])
		s.Status = map[string]Status{"PASS": Passed, "FAIL": Failed}[m[1]]
		return
	}
	if strings.HasPrefix(l, "Test Suites:") || jestSummaryRE.MatchString(l) {
		p.flush()
		p.found, p.file = true, ""
		p.ended = p.ended || jestSummaryRE.MatchString(l)
		return
	}
	if p.file == "" {
		return
	}
	if m := jestFailRE.FindStringSubmatch(l); m != nil {
		p.flush()
		if m[1] == "Test suite failed to run" {
			p.suite = p.c.suite(p.file)
			p.suite.Error = "failed to run"
			return
		}
		t := p.c.test(p.file+" › "+m[1], p.file, m[1])
		t.Status = Failed
		p.fail = t
		return
	}
	if p.fail != nil || p.suite != nil {
		p.body = append(p.body, l)
		return
	}
	if m := jestTestRE.FindStringSubmatch(l); m != nil {
		depth := (len(m[1]) - 2) / 2
		if depth < 0 || depth > len(p.groups) {
			return
		}
		name := strings.Join(append(append([]string(nil), p.groups[:depth]...), m[4]), " › ")
		t := p.c.test(p.file+" › "+name, p.file, name)
		if t.Status != Failed {
			t.Status = jsStatus[m[2]]
		}
		return
	}
	if m := jestGroupRE.FindStringSubmatch(l); m != nil {
		depth := (len(m[1]) - 2) / 2
		if len(m[1])%2 != 0 || depth < 0 || depth > len(p.groups) {
			return
		}
		p.groups = append(p.groups[:depth], m[2])
	}
}

// flush ends the failure text being read.
func (p *jestParser) flush() {
	switch {
	case p.fail != nil:
		p.fail.Message = jestMessage(p.body)
	case p.suite != nil:
		p.suite.Message = jestMessage(p.body)
		jsPlaces(p.suite, p.dir, p.body)
	}
	p.fail, p.suite, p.body = nil, nil, nil
}

// vitestParser reads Vitest's default and verbose reporters.
type vitestParser struct {
	dir   string
	c     *collector
	found bool
	cut   bool
	ended bool
	fail  *Test
	suite *Suite
	body  []string
}

func parseVitest(ls []string, dir string) results {
	if r, ok := parseJSReport(ls, dir); ok {
		return r
	}
	p := &vitestParser{dir: dir, c: newCollector()}
	for _, l := range ls {
		if l == elided {
			p.flush()
			p.cut = true
			continue
		}
		p.line(l)
	}
	p.flush()
	ts, ss := p.c.results()
	return results{tests: ts, suites: ss, complete: p.ended && !p.cut, found: p.found}
}

func (p *vitestParser) line(l string) {
	if m := vitestFileRE.FindStringSubmatch(l); m != nil {
		p.flush()
		p.found = true
		s := p.c.suite(m[2])
		switch {
		case m[1] == "↓":
			s.Status = Skipped
		case m[1] == "✓":
			s.Status = Passed
		default:
			s.Status = Failed
		}
		return
	}
	if m := vitestTestRE.FindStringSubmatch(l); m != nil {
		p.flush()
		p.found = true
		p.c.suite(m[2])
		t := p.c.test(m[2]+" > "+m[3], m[2], m[3])
		if t.Status != Failed {
			t.Status = jsStatus[m[1]]
		}
		return
	}
	if m := vitestFailRE.FindStringSubmatch(l); m != nil {
		p.flush()
		p.found = true
		if m[2] == "" {
			p.suite = p.c.suite(m[1])
			p.suite.Error = "failed to run"
			return
		}
		t := p.c.test(m[1]+" > "+m[2], m[1], m[2])
		t.Status = Failed
		p.fail = t
		return
	}
	if vitestRuleRE.MatchString(l) {
		p.flush()
		return
	}
	if vitestSummaryRE.MatchString(l) {
		p.flush()
		p.found, p.ended = true, true
		return
	}
	if p.fail != nil || p.suite != nil {
		p.body = append(p.body, l)
	}
}

func (p *vitestParser) flush() {
	switch {
	case p.fail != nil:
		p.fail.Message = jestMessage(p.body)
	case p.suite != nil:
		p.suite.Message = jestMessage(p.body)
		jsPlaces(p.suite, p.dir, p.body)
	}
	p.fail, p.suite, p.body = nil, nil, nil
}

// jsReport is the JSON report of `jest --json` and `vitest
// --reporter=json`.
type jsReport struct {
	NumTotalTests             *int `json:"numTotalTests"`
	NumRuntimeErrorTestSuites *int `json:"numRuntimeErrorTestSuites"`
	TestResults               []struct {
		Name             string `json:"name"`
		Status           string `json:"status"`
		Message          string `json:"message"`
		AssertionResults []struct {
			AncestorTitles  []string `json:"ancestorTitles"`
			Title           string   `json:"title"`
			Status          string   `json:"status"`
			FailureMessages []string `json:"failureMessages"`
		} `json:"assertionResults"`
	} `json:"testResults"`
}

// parseJSReport finds and reads a JSON report in the output. Jest's report
// names suites with " › ", Vitest's (which lacks Jest's
// numRuntimeErrorTestSuites) with " > ".
func parseJSReport(ls []string, dir string) (results, bool) {
	for _, l := range ls {
		if !strings.HasPrefix(l, "{") || !strings.Contains(l, `"testResults"`) {
			continue
		}
		var rep jsReport
		if json.Unmarshal([]byte(l), &rep) != nil || rep.NumTotalTests == nil {
			continue
		}
		sep := " > "
		if rep.NumRuntimeErrorTestSuites != nil {
			sep = " › "
		}
		c := newCollector()
		for _, f := range rep.TestResults {
			file, ok := relPath(dir, f.Name)
			if !ok {
				file = f.Name
			}
			s := c.suite(file)
			switch f.Status {
			case "passed":
				s.Status = Passed
			case "failed":
				s.Status = Failed
			default:
				s.Status = Skipped
			}
			if len(f.AssertionResults) == 0 && f.Status == "failed" {
				body := splitLines(f.Message)
				s.Error, s.Message = "failed to run", jestMessage(body)
				jsPlaces(s, dir, body)
			}
			for _, a := range f.AssertionResults {
				name := strings.Join(append(append([]string(nil), a.AncestorTitles...), a.Title), sep)
				t := c.test(file+sep+name, file, name)
				switch a.Status {
				case "passed":
					t.Status = Passed
				case "failed":
					t.Status = Failed
					t.Message = jsonFailure(a.FailureMessages)
				default: // pending, skipped, todo, disabled
					t.Status = Skipped
				}
			}
		}
		ts, ss := c.results()
		return results{tests: ts, suites: ss, complete: true, found: true}, true
	}
	return results{}, false
}

// jsonFailure keeps a JSON report's failure text up to its first stack
// frame, and that frame.
func jsonFailure(msgs []string) string {
	if len(msgs) == 0 {
		return ""
	}
	var kept []string
	for _, l := range splitLines(msgs[0]) {
		kept = append(kept, l)
		if strings.HasPrefix(strings.TrimSpace(l), "at ") {
			break
		}
	}
	return message(kept)
}
