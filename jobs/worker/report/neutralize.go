package report

import (
	"regexp"
	"strings"
)

// Neutralize makes model-written Markdown safe to post on GitHub under the
// bot's name (DESIGN.md §9): @-mentions and team mentions are defused so
// nobody is pinged, closing keywords followed by an issue reference ("fixes
// #12") are defused so merging the PR cannot close unrelated issues, images
// are removed, and raw HTML is shown as text. Code spans and fenced code
// blocks are left as they are: GitHub neither links nor renders inside them.
func Neutralize(md string) string {
	var b strings.Builder
	b.Grow(len(md) + len(md)/8)
	var fence string // the opening fence while inside a fenced block
	for _, line := range strings.SplitAfter(md, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			b.WriteString(line)
			if isFenceClose(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if f := fenceOpen(trimmed, line); f != "" {
			fence = f
			b.WriteString(line)
			continue
		}
		b.WriteString(neutralizeInline(line))
	}
	return b.String()
}

// fenceOpen returns the fence (e.g. "```" or "~~~~") when line opens a fenced
// code block: at most three spaces of indentation, then three or more
// backticks or tildes.
func fenceOpen(trimmed, line string) string {
	if len(line)-len(trimmed) > 3 {
		return ""
	}
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(trimmed) && trimmed[n] == c {
			n++
		}
		if n >= 3 {
			if c == '`' && strings.ContainsRune(trimmed[n:], '`') {
				return "" // a backtick info string cannot hold backticks
			}
			return trimmed[:n]
		}
	}
	return ""
}

func isFenceClose(trimmed, fence string) bool {
	n := 0
	for n < len(trimmed) && trimmed[n] == fence[0] {
		n++
	}
	return n >= len(fence) && strings.TrimSpace(trimmed[n:]) == ""
}

// neutralizeInline rewrites one line outside fenced blocks, leaving inline
// code spans untouched.
func neutralizeInline(line string) string {
	var b strings.Builder
	for line != "" {
		start := strings.IndexByte(line, '`')
		if start < 0 {
			b.WriteString(neutralizeText(line))
			break
		}
		n := runLen(line[start:], '`')
		end := closingRun(line[start+n:], n)
		if end < 0 {
			// An unmatched backtick run is literal text.
			b.WriteString(neutralizeText(line[:start+n]))
			line = line[start+n:]
			continue
		}
		b.WriteString(neutralizeText(line[:start]))
		b.WriteString(line[start : start+n+end+n])
		line = line[start+n+end+n:]
	}
	return b.String()
}

func runLen(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// closingRun finds a backtick run of exactly n in s and returns its offset.
func closingRun(s string, n int) int {
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		m := runLen(s[i:], '`')
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

var (
	imageRe   = regexp.MustCompile(`!\[[^\]]*\](\([^)]*\)|\[[^\]]*\])?`)
	mentionRe = regexp.MustCompile(`(^|[^\w/@.-])@([A-Za-z0-9][A-Za-z0-9-]*(/[A-Za-z0-9_.-]+)?)`)
	// closingRe is a closing keyword and what it closes: #N, owner/repo#N,
	// GH-N, or an issue or pull request URL; group 1 is everything up to
	// the number, group 2 the number.
	closingRe = regexp.MustCompile(`(?i)(\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)(?::\s*|\s+)(?:(?:[\w.-]+/[\w.-]+)?#|GH-|https?://\S+?/(?:issues|pull)/))(\d+)`)
	// ampRe is an ampersand that does not start one of the entities this
	// file writes (so Neutralize stays idempotent): an entity such as
	// &#64; would otherwise show "@" and ping.
	ampRe = regexp.MustCompile(`&(#8203;|amp;|lt;)?`)
)

// zwsp is a zero-width space as an HTML entity: after "@" or "#" it keeps the
// text readable while GitHub no longer sees a mention or an issue reference.
const zwsp = "&#8203;"

// neutralizeText rewrites text that is not code.
func neutralizeText(s string) string {
	s = imageRe.ReplaceAllString(s, "(image removed)")
	s = ampRe.ReplaceAllStringFunc(s, func(m string) string {
		if m == "&" {
			return "&amp;"
		}
		return m
	})
	s = strings.ReplaceAll(s, "<", "&lt;")
	s = mentionRe.ReplaceAllString(s, "$1@"+zwsp+"$2")
	s = closingRe.ReplaceAllString(s, "${1}"+zwsp+"${2}")
	return s
}

// PlainTitle makes issue text, written by whoever opened the issue, safe
// as a pull request or commit title, where GitHub shows text as it is:
// closing keywords lose their effect, so merging cannot close other
// issues, and @-mentions ping nobody (a zero-width space after "@" and
// before the number).
func PlainTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = mentionRe.ReplaceAllString(s, "$1@\u200b$2")
	return closingRe.ReplaceAllString(s, "${1}\u200b${2}")
}
