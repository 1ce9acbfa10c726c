package proof

import (
	"encoding/xml"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
)

var (
	// reportRE matches the paths of JUnit XML reports: Maven Surefire's and
	// Failsafe's, and Gradle's.
	reportRE = regexp.MustCompile(`(?:^|/)(?:target/(?:surefire|failsafe)-reports|build/test-results/[^/]+)/TEST-[^/]+\.xml$`)
	// javacRE matches a compiler error: Maven's "[ERROR] /w/src/A.java:[9,29]
	// cannot find symbol", Gradle's "/w/src/A.java:9: error: …", Kotlin's
	// "e: file:///w/src/A.kt:9:5 …".
	javacRE = regexp.MustCompile(`^(?:\[ERROR\] |e: )?((?:file://)?\S+\.(?:java|kt|groovy|scala))(?::\[(\d+),\d+\]|:(\d+)(?::\d+)?:?)(?: error:)? (.+)$`)
	// mavenGoalRE matches the line Maven names the failed compile goal with.
	mavenGoalRE = regexp.MustCompile(`^\[ERROR\] Failed to execute goal \S+:((?:test)?[cC]ompile) \([^)]*\) on project (\S+): Compilation failure`)
	// gradleTaskRE matches Gradle's failed compile task: "> Task
	// :app:compileTestJava FAILED".
	gradleTaskRE = regexp.MustCompile(`^> Task (\S*:compile\w*) FAILED$`)
	// mavenSkippedRE matches a module the reactor skipped after a failure.
	mavenSkippedRE = regexp.MustCompile(`^\[INFO\] \S.* (?:\.+ )?SKIPPED$`)
)

// IsReport reports whether path (relative to the working copy) is where
// Maven Surefire or Failsafe, or Gradle, writes a JUnit XML report
// (target/surefire-reports/TEST-*.xml, build/test-results/test/TEST-*.xml),
// in any module. The harness reads these files after a run and passes them
// as Input.Reports; it must take only files the run wrote (delete stale ones
// before, or compare modification times), since a repository may commit
// old ones.
func IsReport(path string) bool {
	return reportRE.MatchString(path)
}

type junitSuite struct {
	XMLName xml.Name
	Name    string       `xml:"name,attr"`
	Cases   []junitCase  `xml:"testcase"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitCase struct {
	Name      string      `xml:"name,attr"`
	Classname string      `xml:"classname,attr"`
	Failure   *junitFail  `xml:"failure"`
	Error     *junitFail  `xml:"error"`
	Skipped   *junitFail  `xml:"skipped"`
	Flaky     []junitFail `xml:"flakyFailure"`
}

type junitFail struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// parseSurefire reads JUnit XML reports, and, from the output, compiler
// errors (no report is written when the tests do not build) and modules
// the reactor skipped.
func parseSurefire(reports map[string][]byte, ls []string, in Input) (results, []string) {
	c := newCollector()
	var warnings []string
	names := make([]string, 0, len(reports))
	for n := range reports {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var s junitSuite
		if err := xml.Unmarshal(reports[n], &s); err != nil {
			warnings = append(warnings, fmt.Sprintf("report %s is not JUnit XML: %v", n, err))
			continue
		}
		switch s.XMLName.Local {
		case "testsuite":
			addJUnit(c, s)
		case "testsuites":
			for _, sub := range s.Suites {
				addJUnit(c, sub)
			}
		default:
			warnings = append(warnings, fmt.Sprintf("report %s is not JUnit XML: root element <%s>", n, s.XMLName.Local))
		}
	}
	broken, skipped, testFailures := false, false, false
	var errs []string
	var places []Place
	inErr := false
	for _, l := range ls {
		if m := javacRE.FindStringSubmatch(l); m != nil {
			errs, inErr = append(errs, strings.TrimPrefix(l, "[ERROR] ")), true
			places = append(places, Place{m[1], atoi(m[2] + m[3])})
			continue
		}
		if rest := strings.TrimPrefix(l, "[ERROR] "); inErr && strings.HasPrefix(rest, "  ") && strings.TrimSpace(rest) != "" {
			errs = append(errs, rest) // javac's "  symbol: …" lines
			continue
		}
		inErr = false
		name := ""
		if m := mavenGoalRE.FindStringSubmatch(l); m != nil {
			name = m[2] + " (" + m[1] + ")"
		} else if m := gradleTaskRE.FindStringSubmatch(l); m != nil {
			name = m[1]
		}
		if name != "" {
			broken = true
			s := c.suite(name)
			s.Status, s.Error, s.Message = Failed, "build failed", message(errs)
			for _, pl := range places {
				s.addPlace(in.Dir, pl.File, pl.Line)
			}
			errs, places = nil, nil
		}
		skipped = skipped || mavenSkippedRE.MatchString(l)
		testFailures = testFailures || strings.Contains(l, "There are test failures")
	}
	quiet := false
	for _, w := range words(in.Command) {
		quiet = quiet || w == "-q" || w == "--quiet"
	}
	ts, ss := c.results()
	complete := len(reports) > 0 && len(warnings) == 0 && !broken && !skipped &&
		(in.ExitCode == 0 && !in.TimedOut || testFailures && !quiet)
	return results{tests: ts, suites: ss, complete: complete, found: len(ts) > 0 || broken}, warnings
}

func addJUnit(c *collector, s junitSuite) {
	for _, tc := range s.Cases {
		class := tc.Classname
		if class == "" {
			class = s.Name
		}
		c.suite(class)
		t := c.test(class+"#"+tc.Name, class, tc.Name)
		switch {
		case tc.Failure != nil:
			t.Status, t.Message = Failed, junitMessage(tc.Failure)
		case tc.Error != nil:
			t.Status, t.Message = Failed, junitMessage(tc.Error)
		case tc.Skipped != nil:
			t.Status = Skipped
		default:
			t.Status = Passed
		}
	}
}

// junitMessage keeps a failure's text up to its second stack frame, or its
// message attribute when it has no text.
func junitMessage(f *junitFail) string {
	body := splitLines(strings.TrimSpace(f.Text))
	if len(body) == 0 {
		return message(splitLines(f.Message))
	}
	var kept []string
	frames := 0
	for _, l := range body {
		if strings.HasPrefix(strings.TrimSpace(l), "at ") {
			if frames++; frames > 2 {
				break
			}
		}
		kept = append(kept, l)
	}
	return message(kept)
}

// classOfFile returns the Java class a test file under src/<set>/<lang>/
// declares: src/test/java/com/x/FooTest.java → com.x.FooTest.
func classOfFile(file string) string {
	ext := path.Ext(file)
	p := strings.TrimSuffix(file, ext)
	parts := strings.Split(p, "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "src" {
			return strings.Join(parts[i+3:], ".")
		}
	}
	return path.Base(p)
}
