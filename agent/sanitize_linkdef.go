package agent

import (
	"sort"
	"strings"
)

// maxLabel is the longest label of a link reference definition CommonMark
// allows.
const maxLabel = 999

// linkDefinition reports whether a link reference definition starts at line
// start i, after up to three spaces and any blockquote or list item
// markers, and returns the index past its last line: "[label]:", the
// destination (<...> or a run without spaces, on the same line or the
// next), and an optional title ("...", '...' or (...), possibly over
// several lines of the paragraph) on the destination's line or the next,
// followed by nothing but spaces. GitHub renders nothing of it.
func (sc *scanner) linkDefinition(i int) (int, bool) {
	s := sc.s
	j := containerMarkers(s, i)
	for n := 0; n < 3 && j < sc.end && s[j] == ' '; n++ {
		j++
	}
	if j >= sc.end || s[j] != '[' {
		return 0, false
	}
	label := j + 1
	for j = label; ; j++ {
		if j >= sc.end || j-label > maxLabel || s[j] == '[' {
			return 0, false
		}
		if s[j] == '\\' {
			j++
			continue
		}
		if s[j] == ']' {
			break
		}
	}
	if strings.TrimSpace(s[label:j]) == "" || s[label] == '^' || j+1 >= len(s) || s[j+1] != ':' {
		return 0, false
	}
	j = skipBlanks(s, j+2)
	if j < sc.end && s[j] == '\n' {
		j = skipBlanks(s, j+1)
	}
	j, ok := destination(s, j, sc.end)
	if !ok {
		return 0, false
	}
	if rest := s[j:lineEnd(s, j)]; strings.TrimSpace(rest) == "" {
		// A title may follow on the next line; without one the
		// definition ends here.
		next := nextLine(s, j)
		if t := skipBlanks(s, skipQuoteMarkers(s, next)); next < sc.end {
			if end, ok := sc.title(t); ok {
				return end, true
			}
		}
		return next, true
	}
	if s[j] != ' ' && s[j] != '\t' {
		return 0, false
	}
	return sc.title(skipBlanks(s, j))
}

// destination returns the end of a link destination at j: <...> on one
// line, or a non-empty run of characters other than spaces and controls.
func destination(s string, j, end int) (int, bool) {
	if j >= end || s[j] <= ' ' {
		return 0, false
	}
	if s[j] == '<' {
		for k := j + 1; k < end; k++ {
			switch s[k] {
			case '\\':
				k++
			case '\n', '<':
				return 0, false
			case '>':
				return k + 1, true
			}
		}
		return 0, false
	}
	k := j
	for k < end && s[k] > ' ' {
		k++
	}
	return k, true
}

// title returns the index past the line that ends a link title starting at
// j, when the title closes in the paragraph and only spaces follow it.
func (sc *scanner) title(j int) (int, bool) {
	if j >= sc.end {
		return 0, false
	}
	var closing int
	switch c := sc.s[j]; c {
	case '"', '\'':
		closing = sc.nextDelim(c, j)
	case '(':
		closing = sc.nextDelim(')', j)
		if open := sc.nextDelim('(', j); open >= 0 && open < closing {
			return 0, false // an unescaped ( inside the title
		}
	default:
		return 0, false
	}
	if closing < 0 || strings.TrimSpace(sc.s[closing+1:lineEnd(sc.s, closing)]) != "" {
		return 0, false
	}
	return nextLine(sc.s, closing), true
}

// nextDelim returns the index of the paragraph's first unescaped c after
// j, or -1.
func (sc *scanner) nextDelim(c byte, j int) int {
	at := sc.delims[c]
	if k := sort.SearchInts(at, j+1); k < len(at) {
		return at[k]
	}
	return -1
}

// containerMarkers returns the index past the blockquote markers (">") and
// list item markers ("-", "*", "+", "1.", "1)" followed by a space) that
// open the line at i, each after up to three spaces.
func containerMarkers(s string, i int) int {
	for {
		j := i
		for n := 0; n < 3 && j < len(s) && s[j] == ' '; n++ {
			j++
		}
		switch {
		case j < len(s) && s[j] == '>':
			i = j + 1
			if i < len(s) && s[i] == ' ' {
				i++
			}
			continue
		case j+1 < len(s) && strings.IndexByte("-*+", s[j]) >= 0 && (s[j+1] == ' ' || s[j+1] == '\t'):
			i = j + 2
			continue
		}
		k := j
		for k < len(s) && k-j < 9 && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k > j && k+1 < len(s) && (s[k] == '.' || s[k] == ')') && (s[k+1] == ' ' || s[k+1] == '\t') {
			i = k + 2
			continue
		}
		return i
	}
}

// skipQuoteMarkers returns the index past the spaces and blockquote
// markers that open the line at i (a definition's title may go on in the
// blockquote's next line).
func skipQuoteMarkers(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '>') {
		i++
	}
	return i
}

// skipBlanks returns the index of the first character at or after i that
// is not a space or a tab.
func skipBlanks(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}
