package worker

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/agentfix/agentfix/ghapp"
)

// How much of a failed check a ci round shows the agent.
const (
	// maxLogExcerpt bounds, in bytes, the part of one job's log a round
	// shows.
	maxLogExcerpt = 12 << 10
	// maxJobLog bounds, in bytes, the end of a job's log the worker
	// downloads to find that part in.
	maxJobLog = 4 << 20
	// maxCheckText bounds each of a check's output title, summary and
	// text.
	maxCheckText = 4 << 10
	// maxAnnotations is how many of a check's annotations a round shows.
	maxAnnotations = 50
	// logBefore and logAfter are the lines kept before and after a line
	// that reports an error.
	logBefore, logAfter = 10, 20
	// logTail is how many lines of the end are kept of a log in which no
	// line reports an error.
	logTail = 80
)

var (
	// logStamp is the time stamp GitHub Actions starts every log line
	// with.
	logStamp = regexp.MustCompile(`^\x{FEFF}?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) ?`)
	// ansi matches terminal escape sequences: colours and cursor moves
	// (CSI), titles and links (OSC), and lone escapes.
	ansi = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])`)
	// errorLine matches a line that reports an error: GitHub's error
	// command, a compiler's path:line: diagnostic, a failed test, a
	// panic or a traceback.
	errorLine = regexp.MustCompile(`(?i)(^\s*error\b|^\s*[\w./\\-]+\.\w+:\d+(:\d+)?:|\berrors?\b|\bfail(ed|ure|ing)?\b|\bpanic:|traceback|exception\b|\bfatal\b|^\s*not ok\b|✗|✖)`)
)

// timeSpan is when a job's step ran.
type timeSpan struct{ from, to time.Time }

// logLine is a line of a job's log without its time stamp.
type logLine struct {
	at   time.Time // zero when the line had no time stamp
	text string
}

// failedSteps returns the names and the times of the steps of job that
// failed.
func failedSteps(job ghapp.WorkflowJob) ([]string, []timeSpan) {
	var names []string
	var spans []timeSpan
	for _, s := range job.Steps {
		if !failedConclusion(s.Conclusion) {
			continue
		}
		names = append(names, s.Name)
		if !s.StartedAt.IsZero() && !s.CompletedAt.IsZero() {
			spans = append(spans, timeSpan{s.StartedAt, s.CompletedAt})
		}
	}
	return names, spans
}

// failedConclusion reports whether a check or step with this conclusion
// failed; neutral, skipped, cancelled and the rest did not.
func failedConclusion(c string) bool {
	return c == "failure" || c == "timed_out" || c == "startup_failure"
}

// logExcerpt returns the part of a GitHub Actions job's log that a round
// shows the agent: the lines of the failed steps (by their times; the
// whole log when none are known or none match), without time stamps or
// terminal escapes, GitHub's log commands made plain; of those, the lines
// around each line that reports an error (the end, when none does), with
// a note where lines were left out; at most max bytes, cut in the middle.
func logExcerpt(raw string, failed []timeSpan, max int) string {
	lines := parseLog(raw)
	if sel := inSpans(lines, failed); len(sel) > 0 {
		lines = sel
	}
	texts := make([]string, 0, len(lines))
	for _, l := range lines {
		if t, ok := plainLogLine(l.text); ok {
			texts = append(texts, t)
		}
	}
	return capMiddle(keepAroundErrors(texts), max)
}

// parseLog splits a job's log into lines, taking off their time stamps
// and terminal escapes; of a line rewritten in place (carriage returns)
// the last version is kept.
func parseLog(raw string) []logLine {
	raw = strings.ReplaceAll(raw, "\r\n", "\n")
	var out []logLine
	for _, s := range strings.Split(strings.TrimRight(raw, "\n"), "\n") {
		var l logLine
		if m := logStamp.FindStringSubmatch(s); m != nil {
			l.at, _ = time.Parse(time.RFC3339Nano, m[1])
			s = s[len(m[0]):]
		}
		if i := strings.LastIndexByte(strings.TrimRight(s, "\r"), '\r'); i >= 0 {
			s = s[i+1:]
		}
		l.text = strings.TrimRight(ansi.ReplaceAllString(s, ""), " \t\r")
		out = append(out, l)
	}
	return out
}

// inSpans returns the lines stamped within one of spans, a second wider
// each side (GitHub gives steps' times to the second); a line without a
// stamp goes with the line before it.
func inSpans(lines []logLine, spans []timeSpan) []logLine {
	if len(spans) == 0 {
		return nil
	}
	var out []logLine
	keep := false
	for _, l := range lines {
		if !l.at.IsZero() {
			keep = false
			for _, s := range spans {
				if !l.at.Before(s.from.Add(-time.Second)) && !l.at.After(s.to.Add(time.Second)) {
					keep = true
				}
			}
		}
		if keep {
			out = append(out, l)
		}
	}
	return out
}

// plainLogLine turns GitHub's log commands into plain text: a group's
// header is its title, the end of a group and debug lines go, an error or
// a warning says so. ok is false for a line that goes.
func plainLogLine(s string) (string, bool) {
	switch {
	case strings.HasPrefix(s, "##[endgroup]"), strings.HasPrefix(s, "##[debug]"):
		return "", false
	case strings.HasPrefix(s, "##[group]"):
		return strings.TrimPrefix(s, "##[group]"), true
	case strings.HasPrefix(s, "##[error]"):
		return "Error: " + strings.TrimPrefix(s, "##[error]"), true
	case strings.HasPrefix(s, "##[warning]"):
		return "Warning: " + strings.TrimPrefix(s, "##[warning]"), true
	}
	return s, true
}

// keepAroundErrors keeps the lines around each line that reports an
// error, logBefore before and logAfter after, and notes how many lines it
// left out between them; without such a line it keeps the last logTail.
func keepAroundErrors(lines []string) string {
	keep := make([]bool, len(lines))
	found := false
	for i, l := range lines {
		if !errorLine.MatchString(l) {
			continue
		}
		found = true
		for k := max(0, i-logBefore); k <= min(len(lines)-1, i+logAfter); k++ {
			keep[k] = true
		}
	}
	if !found {
		for k := max(0, len(lines)-logTail); k < len(lines); k++ {
			keep[k] = true
		}
	}
	var b strings.Builder
	left := 0
	for i, l := range lines {
		if !keep[i] {
			left++
			continue
		}
		if left > 0 {
			fmt.Fprintf(&b, "… (%d %s left out)\n", left, plural(left, "line", "lines"))
			left = 0
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if left > 0 {
		fmt.Fprintf(&b, "… (%d %s left out)\n", left, plural(left, "line", "lines"))
	}
	return b.String()
}

// capMiddle cuts s to about max bytes by leaving out its middle, at line
// breaks, with a note saying how much: the first errors and the end of a
// log both matter.
func capMiddle(s string, max int) string {
	if len(s) <= max {
		return s
	}
	head := s[:max/3]
	if i := strings.LastIndexByte(head, '\n'); i > 0 {
		head = head[:i+1]
	}
	start := len(s) - (max - len(head))
	tail := s[start:]
	if i := strings.IndexByte(tail, '\n'); s[start-1] != '\n' && i >= 0 && i < len(tail)-1 {
		tail = tail[i+1:] // from the next whole line
	}
	return strings.ToValidUTF8(head, "") + fmt.Sprintf("… (%d bytes left out)\n", len(s)-len(head)-len(tail)) + strings.ToValidUTF8(tail, "")
}

// annotationLines returns a check's annotations as path:line: message
// lines (the title first when it has one), one line each.
func annotationLines(anns []ghapp.Annotation) []string {
	out := make([]string, 0, len(anns))
	for _, a := range anns {
		msg := strings.Join(strings.Fields(a.Message), " ")
		if t := strings.TrimSpace(a.Title); t != "" && !strings.Contains(msg, t) {
			msg = t + ": " + msg
		}
		where := a.Path
		if a.StartLine > 0 {
			where = fmt.Sprintf("%s:%d", a.Path, a.StartLine)
		}
		out = append(out, where+": "+msg)
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
