package agent

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// SanitizeText removes from untrusted Markdown (issue and comment text) what
// a person reading it on GitHub does not see but a model would read:
// HTML comments, link reference definitions ("[//]: # (a comment)",
// `[x]: <url> "title"`; the lines they take are dropped), images with their
// alt text (markdown and <img>, each replaced by "[image]"), zero-width,
// bidi-control, tag and variation selector characters, and control
// characters other than tab and newline. Line endings become "\n" and
// invalid UTF-8 becomes U+FFFD.
//
// Code is shown on GitHub as written, so HTML comments, definitions and
// image syntax inside fenced code blocks and inline code spans are kept. An
// HTML comment hides everything up to its end, fences included, as GitHub
// renders it. A line that reads as a definition is dropped even where
// GitHub would show it (a definition cannot interrupt a paragraph): the
// model may see less than a person, never more. Footnote definitions
// ("[^1]: text") are not link definitions and are kept. Invisible
// characters are removed everywhere, code included.
func SanitizeText(s string) string {
	return stripHidden(stripInvisible(s))
}

// stripInvisible makes s valid UTF-8 with "\n" line endings and removes its
// invisible characters; it is all a plain-text field (a title) needs.
func stripInvisible(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Map(func(r rune) rune {
		if invisible(r) {
			return -1
		}
		return r
	}, s)
}

// invisible reports runes that render as nothing (or reorder what renders)
// and so can smuggle text past a human reader.
func invisible(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r < 0x20 || (r >= 0x7f && r <= 0x9f): // C0, DEL, C1 controls
		return true
	case r == 0x00ad: // soft hyphen
		return true
	case r == 0x061c || r == 0x200e || r == 0x200f: // bidi marks
		return true
	case r >= 0x202a && r <= 0x202e: // bidi embeddings and overrides
		return true
	case r >= 0x2066 && r <= 0x2069: // bidi isolates
		return true
	case r >= 0x200b && r <= 0x200d: // zero-width space, non-joiner, joiner
		return true
	case r >= 0x2060 && r <= 0x2064: // word joiner, invisible operators
		return true
	case r == 0xfeff || r == 0x180e: // BOM / zero-width no-break space, Mongolian vowel separator
		return true
	case r >= 0xfe00 && r <= 0xfe0f: // variation selectors
		return true
	case r >= 0xe0000 && r <= 0xe007f: // tag characters
		return true
	case r >= 0xe0100 && r <= 0xe01ef: // variation selectors supplement
		return true
	}
	return false
}

// stripHidden removes HTML comments and images outside code. It runs in
// time linear in len(s) (up to the distinct backtick run lengths of a
// paragraph), since its input is untrusted.
func stripHidden(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	sc := scanner{s: s, lastGT: strings.LastIndexByte(s, '>')}
	for i := 0; i < len(s); {
		if i == 0 || s[i-1] == '\n' {
			if end, ok := fencedBlock(s, i); ok {
				b.WriteString(s[i:end])
				i = end
				continue
			}
			sc.paragraph(i)
			if end, ok := sc.linkDefinition(i); ok {
				i = end
				continue
			}
		}
		sc.paragraph(i)
		switch {
		case strings.HasPrefix(s[i:], "<!--"):
			end := strings.Index(s[i+4:], "-->")
			if end < 0 {
				return b.String()
			}
			i += 4 + end + 3
		case s[i] == '`':
			end := sc.codeSpan(i)
			b.WriteString(s[i:end])
			i = end
		case strings.HasPrefix(s[i:], "!["):
			if end, ok := sc.image(i); ok {
				b.WriteString("[image]")
				i = end
				continue
			}
			b.WriteByte('!')
			i++
		case s[i] == '<' && i < sc.lastGT && isImgTag(s[i:]):
			b.WriteString("[image]")
			i += strings.IndexByte(s[i:], '>') + 1
		default:
			_, size := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+size])
			i += size
		}
	}
	return b.String()
}

// scanner holds what stripHidden knows about the current paragraph (text up
// to the next blank line): where each bracket and parenthesis closes, which
// backtick run lengths have no closing run, and where the unescaped title
// delimiters of link reference definitions are, so no position is scanned
// to the paragraph's end more than a bounded number of times.
type scanner struct {
	s      string
	lastGT int // index of the last '>' in s
	start  int
	end    int
	close  []int        // close[j-start]: index past the bracket matching the one at j, or -1
	noRun  map[int]bool // backtick run lengths that do not occur again in the paragraph
	// delims holds, in order, the indexes of the paragraph's unescaped
	// '"', '\'', '(' and ')'.
	delims map[byte][]int
}

// paragraph makes the paragraph holding i current.
func (sc *scanner) paragraph(i int) {
	if i >= sc.start && i < sc.end {
		return
	}
	sc.start, sc.end = i, paragraphEnd(sc.s, i)
	sc.close = slices.Repeat([]int{-1}, sc.end-sc.start)
	sc.noRun = map[int]bool{}
	sc.delims = map[byte][]int{}
	var squares, rounds []int
	for j := sc.start; j < sc.end; j++ {
		switch c := sc.s[j]; c {
		case '\\':
			j++
		case '"', '\'':
			sc.delims[c] = append(sc.delims[c], j)
		case '[':
			squares = append(squares, j)
		case '(':
			sc.delims[c] = append(sc.delims[c], j)
			rounds = append(rounds, j)
		case ']':
			if n := len(squares); n > 0 {
				sc.close[squares[n-1]-sc.start] = j + 1
				squares = squares[:n-1]
			}
		case ')':
			sc.delims[c] = append(sc.delims[c], j)
			if n := len(rounds); n > 0 {
				sc.close[rounds[n-1]-sc.start] = j + 1
				rounds = rounds[:n-1]
			}
		}
	}
}

// codeSpan returns the end of the inline code span opening with the backtick
// run at i, or the end of that run when no closing run of the same length
// follows in the paragraph (then the backticks are literal).
func (sc *scanner) codeSpan(i int) int {
	n := 0
	for i+n < sc.end && sc.s[i+n] == '`' {
		n++
	}
	if sc.noRun[n] {
		return i + n
	}
	for j := i + n; j < sc.end; {
		k := strings.IndexByte(sc.s[j:sc.end], '`')
		if k < 0 {
			break
		}
		j += k
		m := 0
		for j+m < sc.end && sc.s[j+m] == '`' {
			m++
		}
		if m == n {
			return j + m
		}
		j += m
	}
	sc.noRun[n] = true
	return i + n
}

// image parses a markdown image at i ("![alt](url)", "![alt][ref]" or
// "![alt]") and returns its end.
func (sc *scanner) image(i int) (int, bool) {
	end := sc.closing(i + 1)
	if end < 0 {
		return 0, false
	}
	if end < sc.end && (sc.s[end] == '(' || sc.s[end] == '[') {
		if e := sc.closing(end); e >= 0 {
			return e, true
		}
		if sc.s[end] == '(' {
			return 0, false
		}
	}
	return end, true
}

// closing returns the index past the bracket matching the one at j, or -1.
func (sc *scanner) closing(j int) int {
	if j < sc.start || j >= sc.end {
		return -1
	}
	return sc.close[j-sc.start]
}

// fencedBlock reports whether a fenced code block (``` or ~~~, up to three
// spaces of indentation) opens at line start i and returns the index just
// past its closing fence line, or the end of s when it is never closed.
func fencedBlock(s string, i int) (int, bool) {
	line := s[i:lineEnd(s, i)]
	indent := len(line) - len(strings.TrimLeft(line, " "))
	if indent > 3 {
		return 0, false
	}
	line = line[indent:]
	if len(line) < 3 || (line[0] != '`' && line[0] != '~') {
		return 0, false
	}
	mark := line[0]
	n := len(line) - len(strings.TrimLeft(line, string(mark)))
	if n < 3 || (mark == '`' && strings.IndexByte(line[n:], '`') >= 0) {
		return 0, false
	}
	for j := nextLine(s, i); j < len(s); j = nextLine(s, j) {
		l := strings.TrimRight(s[j:lineEnd(s, j)], " \t")
		trimmed := strings.TrimLeft(l, " ")
		if len(l)-len(trimmed) <= 3 && len(trimmed) >= n && strings.Trim(trimmed, string(mark)) == "" {
			return nextLine(s, j), true
		}
	}
	return len(s), true
}

// isImgTag reports an HTML <img> tag (case-insensitive) at the start of s;
// the caller checks that a '>' closes it (an unclosed one renders as text).
func isImgTag(s string) bool {
	if len(s) < 5 || !strings.EqualFold(s[:4], "<img") {
		return false
	}
	switch s[4] {
	case ' ', '\t', '\n', '/', '>':
		return true
	}
	return false
}

// paragraphEnd returns the index of the first blank line after i, or len(s).
func paragraphEnd(s string, i int) int {
	for j := strings.IndexByte(s[i:], '\n'); j >= 0; {
		at := i + j + 1
		end := lineEnd(s, at)
		if strings.TrimSpace(s[at:end]) == "" {
			return at
		}
		if end == len(s) {
			break
		}
		i, j = end, 0
	}
	return len(s)
}

func lineEnd(s string, i int) int {
	if k := strings.IndexByte(s[i:], '\n'); k >= 0 {
		return i + k
	}
	return len(s)
}

func nextLine(s string, i int) int {
	if e := lineEnd(s, i); e < len(s) {
		return e + 1
	}
	return len(s)
}
