package proof

import (
	"regexp"
	"strings"
)

// elided stands in the lines of an output for the place where a head+tail
// cap dropped bytes; the lines on either side of it are whole.
const elided = "\x00elided\x00"

// MessageLines is the number of lines a failure's message keeps; MessageBytes
// bounds it in bytes.
const (
	MessageLines = 12
	MessageBytes = 2000
)

// TailLines is the number of lines of output Run.Tail keeps.
const TailLines = 40

var (
	// ansiRE matches terminal control sequences: CSI (colours, cursor
	// moves), OSC (titles, hyperlinks) and two-byte escapes.
	ansiRE = regexp.MustCompile(`\x1b\[[0-9;?<=>!]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)
	// headTailRE matches the elision line workspace.HeadTail writes, with
	// the blank lines around it: "\n\n[... 123 bytes elided ...]\n\n".
	headTailRE = regexp.MustCompile(`\n\n\[\.\.\. \d+ bytes elided \.\.\.\]\n\n`)
	// elisionLineRE matches other forms of an elision line on a line of its
	// own: "… (123 bytes elided) …", "[... 123 bytes omitted ...]".
	elisionLineRE = regexp.MustCompile(`(?i)^[\s\[(.…]*\d+ (?:bytes?|lines?|characters?) (?:elided|omitted|truncated)[\s\])….]*$`)
)

// lines returns out as lines without terminal colours, carriage-return
// overdraws or line ends. Where a head+tail cap cut the output it puts one
// elided line and drops the partial lines the cut left on either side.
func lines(out string) []string {
	out = strings.ReplaceAll(out, "\r\n", "\n")
	var ls []string
	for i, part := range splitElisions(out) {
		if i > 0 {
			ls = append(ls, elided)
		}
		for _, l := range part {
			ls = append(ls, cleanLine(l))
		}
	}
	// An elision line of another form: the lines next to it may be partial
	// too.
	var kept []string
	for i := 0; i < len(ls); i++ {
		if ls[i] == elided || !elisionLineRE.MatchString(ls[i]) {
			kept = append(kept, ls[i])
			continue
		}
		if n := len(kept); n > 0 && kept[n-1] != elided {
			kept = kept[:n-1]
		}
		kept = append(kept, elided)
		if i+1 < len(ls) && ls[i+1] != elided {
			i++
		}
	}
	return kept
}

// splitElisions splits out at HeadTail elision lines into runs of lines. A
// head keeps its last line only when it ended at a line end; a tail always
// loses its first line, which may have started mid-line.
func splitElisions(out string) [][]string {
	locs := headTailRE.FindAllStringIndex(out, -1)
	if len(locs) == 0 {
		return [][]string{splitLines(out)}
	}
	var parts [][]string
	start := 0
	for i, loc := range locs {
		seg := out[start:loc[0]]
		if i > 0 {
			seg = dropFirstLine(seg)
		}
		ls := splitLines(seg)
		if !strings.HasSuffix(seg, "\n") && len(ls) > 0 {
			ls = ls[:len(ls)-1]
		}
		parts = append(parts, ls)
		start = loc[1]
	}
	parts = append(parts, splitLines(dropFirstLine(out[start:])))
	return parts
}

func dropFirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return ""
}

// splitLines splits s at line ends; a final line end makes no empty line.
func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// cleanLine removes terminal control sequences from l and keeps only what a
// terminal would show after the last carriage return.
func cleanLine(l string) string {
	if strings.IndexByte(l, 0x1b) >= 0 {
		l = ansiRE.ReplaceAllString(l, "")
	}
	l = strings.TrimRight(l, "\r")
	if i := strings.LastIndexByte(l, '\r'); i >= 0 {
		l = l[i+1:]
	}
	return l
}

// cut reports whether ls has an elision.
func cut(ls []string) bool {
	for _, l := range ls {
		if l == elided {
			return true
		}
	}
	return false
}

// tail returns the last TailLines lines of ls, an elision shown as the line
// "[…]".
func tail(ls []string) string {
	if len(ls) > TailLines {
		ls = ls[len(ls)-TailLines:]
	}
	out := make([]string, len(ls))
	for i, l := range ls {
		if l == elided {
			l = "[…]"
		}
		out[i] = l
	}
	return strings.Join(out, "\n")
}

// message joins the first lines of a failure's output: blank lines at
// either end dropped, the indentation common to all lines removed, at most
// MessageLines lines and MessageBytes bytes.
func message(ls []string) string {
	for len(ls) > 0 && strings.TrimSpace(ls[0]) == "" {
		ls = ls[1:]
	}
	for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1]) == "" {
		ls = ls[:len(ls)-1]
	}
	if len(ls) > MessageLines {
		ls = ls[:MessageLines]
	}
	ls = dedent(ls)
	var b strings.Builder
	for i, l := range ls {
		l = strings.TrimRight(l, " \t")
		if i > 0 {
			b.WriteByte('\n')
		}
		if b.Len()+len(l) > MessageBytes {
			b.WriteString(truncate(l, MessageBytes-b.Len()))
			break
		}
		b.WriteString(l)
	}
	return b.String()
}

// dedent removes the indentation common to the non-blank lines of ls.
func dedent(ls []string) []string {
	indent := -1
	for _, l := range ls {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	if indent <= 0 {
		return ls
	}
	out := make([]string, len(ls))
	for i, l := range ls {
		if len(l) >= indent {
			l = l[indent:]
		}
		out[i] = l
	}
	return out
}

// truncate cuts s to at most n bytes on a character boundary, marking the
// cut with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 3 {
		return "…"
	}
	s = s[:n-3]
	for len(s) > 0 && s[len(s)-1]&0xc0 == 0x80 {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1]&0xc0 == 0xc0 {
		s = s[:len(s)-1]
	}
	return s + "…"
}
