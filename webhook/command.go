package webhook

import (
	"strings"

	"github.com/agentfix/agentfix/jobs"
)

// space is what the design's \s matches.
const space = " \t\f\r"

// parseCommand finds the first command line of a comment body (DESIGN.md
// §4): a line that is, after optional whitespace, the command name (any
// case) followed by whitespace or the end of the line. Quoted lines (">")
// and lines inside fenced code blocks (``` or ~~~) never count. The first
// word after the name selects stop, resume or help; otherwise the instructions are
// the rest of that line plus the rest of the comment.
func parseCommand(body, name string) (jobs.Command, bool) {
	lines := strings.Split(body, "\n")
	var fence string // marker of the open fenced block, "" outside one
	for i, raw := range lines {
		line := strings.TrimLeft(strings.TrimRight(raw, "\r"), space)
		if fence != "" {
			if closesFence(line, fence) {
				fence = ""
			}
			continue
		}
		if f := opensFence(line); f != "" {
			fence = f
			continue
		}
		if strings.HasPrefix(line, ">") {
			continue
		}
		rest, ok := cutName(line, name)
		if !ok {
			continue
		}
		text := strings.TrimSpace(strings.ReplaceAll(rest+"\n"+strings.Join(lines[i+1:], "\n"), "\r\n", "\n"))
		// The verb is the first word on the command's own line, so a
		// sentence starting with "Stop" on the next line stays instructions.
		if fields := strings.Fields(rest); len(fields) > 0 {
			switch v := strings.ToLower(fields[0]); v {
			case jobs.VerbStop, jobs.VerbResume, jobs.VerbHelp:
				after := text[len(fields[0]):]
				return jobs.Command{Verb: v, Instructions: strings.TrimSpace(after)}, true
			}
		}
		return jobs.Command{Instructions: text}, true
	}
	return jobs.Command{}, false
}

// cutName returns what follows the command name at the start of line, if
// the name ends there as a word.
func cutName(line, name string) (string, bool) {
	if len(line) < len(name) || !strings.EqualFold(line[:len(name)], name) {
		return "", false
	}
	rest := line[len(name):]
	if rest != "" && !strings.ContainsRune(space, rune(rest[0])) {
		return "", false
	}
	return rest, true
}

// opensFence returns the marker (three or more backticks or tildes) that
// opens a fenced code block on line, or "".
func opensFence(line string) string {
	if n := run(line); n >= 3 {
		marker := line[:n]
		// A backtick fence's info string may not contain backticks.
		if marker[0] == '`' && strings.Contains(line[n:], "`") {
			return ""
		}
		return marker
	}
	return ""
}

// closesFence reports whether line closes the block opened by marker: the
// same character, at least as many, and nothing else.
func closesFence(line, marker string) bool {
	n := run(line)
	return n >= len(marker) && line[0] == marker[0] && strings.Trim(line[n:], space) == ""
}

// run counts the fence characters (` or ~) repeated at the start of line.
func run(line string) int {
	if line == "" || (line[0] != '`' && line[0] != '~') {
		return 0
	}
	n := 0
	for n < len(line) && line[n] == line[0] {
		n++
	}
	return n
}
