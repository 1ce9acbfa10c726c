// Command testprogress shows `go test -json` as people read `go test`:
// one line per package as soon as the package finishes (go test itself
// holds a package's line back until every package before it in the list
// has finished), the output of failing tests and of build failures, the
// output of tests still running when their package failed (a timeout, a
// crash, a SIGQUIT's goroutine dump: test2json gives that to the test
// that ran last), and a last line counting packages. It exits 1 when anything failed. make test
// pipes go test through it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
)

// event is one record of test2json (go doc cmd/test2json).
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

// summary is what the stream said of all packages.
type summary struct {
	passed, failed, skipped int
}

func main() {
	s, err := show(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testprogress:", err)
		os.Exit(2)
	}
	if s.failed > 0 {
		os.Exit(1)
	}
}

// show reads test2json events from r and writes the progress to w.
func show(r io.Reader, w io.Writer) (summary, error) {
	var s summary
	out := map[string][]string{}   // output per package and test ("pkg\x00test")
	build := map[string][]string{} // build output per import path
	failedTests := map[string][]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(w, "%s\n", line) // not an event: say it as it came
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "build-output":
			build[e.ImportPath] = append(build[e.ImportPath], e.Output)
		case "build-fail":
			s.failed++
			fmt.Fprintf(w, "FAIL %s [build failed]\n%s", e.ImportPath, strings.Join(build[e.ImportPath], ""))
		case "output":
			out[key] = append(out[key], e.Output)
		case "fail":
			if e.Test != "" {
				failedTests[e.Package] = append(failedTests[e.Package], e.Test)
				continue
			}
			s.failed++
			fmt.Fprintf(w, "FAIL %s %.1fs\n", e.Package, e.Elapsed)
			tests := failedTests[e.Package]
			sort.Strings(tests)
			for _, t := range tests {
				if !hasFailedChild(tests, t) {
					fmt.Fprint(w, indent(strings.Join(out[e.Package+"\x00"+t], "")))
				}
			}
			for _, t := range unfinished(out, e.Package, tests) {
				fmt.Fprintf(w, "    %s did not finish:\n", t)
				fmt.Fprint(w, indent(indent(strings.Join(out[e.Package+"\x00"+t], ""))))
			}
			fmt.Fprint(w, indent(strings.Join(out[key], "")))
		case "pass":
			if e.Test != "" {
				delete(out, key) // a passed test's output is never shown
			}
			if e.Test == "" {
				s.passed++
				fmt.Fprintf(w, "ok   %s %.1fs\n", e.Package, e.Elapsed)
			}
		case "skip":
			if e.Test != "" {
				delete(out, key)
			}
			if e.Test == "" {
				s.skipped++
				fmt.Fprintf(w, "-    %s (no test files)\n", e.Package)
			}
		}
		if e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
			for k := range out {
				if strings.HasPrefix(k, e.Package+"\x00") {
					delete(out, k)
				}
			}
			delete(failedTests, e.Package)
		}
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	fmt.Fprintf(w, "\n%d packages passed, %d failed, %d without tests\n", s.passed, s.failed, s.skipped)
	return s, nil
}

// unfinished returns, sorted, the tests of pkg with output kept that
// neither passed, skipped nor failed: those running when the package
// ended.
func unfinished(out map[string][]string, pkg string, failed []string) []string {
	var tests []string
	for k := range out {
		t, ok := strings.CutPrefix(k, pkg+"\x00")
		if ok && t != "" && !slices.Contains(failed, t) {
			tests = append(tests, t)
		}
	}
	sort.Strings(tests)
	return tests
}

// hasFailedChild reports whether a subtest of t failed too: its output
// (which holds t's failure) is shown instead of t's.
func hasFailedChild(tests []string, t string) bool {
	for _, o := range tests {
		if strings.HasPrefix(o, t+"/") {
			return true
		}
	}
	return false
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "    " + l
		}
	}
	return strings.Join(lines, "")
}
