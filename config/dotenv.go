package config

import (
	"regexp"
	"strings"
)

// dotEnvVar is one assignment of a .env file.
type dotEnvVar struct {
	key, value string
	line       int // of the key, from 1
}

// dotEnvKey is what a variable's name may hold in .env.
var dotEnvKey = regexp.MustCompile(`^[A-Za-z0-9_.]+$`)

// parseDotEnv reads the assignments of a .env file, shown as name in
// problems, in the format docker compose and godotenv share:
//
//	# a comment
//	KEY=value            # a comment after a space
//	export KEY='taken as written, may span lines'
//	KEY="a line feed: \n"
//
// An unquoted value is trimmed; a single-quoted one is taken as written; in
// a double-quoted one \n and \r are a line feed and a carriage return, and
// a backslash before any other character keeps just that character. Values
// are never expanded ($VAR stays as written). A later assignment of a key
// wins. Every line that is none of these is a problem at its line; the
// problems never quote a value, which may be a secret. After a quote that
// never closes, the lines up to the next assignment are taken as the rest
// of that value and skipped.
func parseDotEnv(name string, data []byte) ([]dotEnvVar, []error) {
	src := strings.ReplaceAll(string(data), "\r\n", "\n")
	var vars []dotEnvVar
	var problems []error
	add := func(line int, key, msg string) {
		problems = append(problems, &fileProblem{file: name, line: line, key: key, msg: msg})
	}
	line := 1
	skipping := false // the lines after a quote that never closes
	for pos := 0; pos < len(src); {
		end := lineEnd(src, pos)
		next := end + 1 // the start of the next statement
		stmt := strings.TrimLeft(src[pos:end], " \t")
		if rest, ok := strings.CutPrefix(stmt, "export"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			stmt = strings.TrimLeft(rest, " \t")
		}
		i := strings.IndexAny(stmt, "=:")
		key := ""
		if i > 0 {
			key = strings.TrimRight(stmt[:i], " \t")
		}
		switch {
		case stmt == "" || stmt[0] == '#':
		case skipping && (i < 0 || !dotEnvKey.MatchString(key)):
		case i < 0:
			add(line, "", "expected KEY=value; the line has no =")
		case !dotEnvKey.MatchString(key):
			add(line, "", "expected KEY=value, with KEY made of letters, digits and _")
		default:
			valueAt := end - len(strings.TrimLeft(stmt[i+1:], " \t"))
			value, stop, msg := dotEnvValue(src, valueAt, end)
			skipping = stop < 0
			if msg != "" {
				add(line, key, msg)
			} else {
				vars = append(vars, dotEnvVar{key: key, value: value, line: line})
				next = stop + 1
			}
		}
		line += strings.Count(src[pos:min(next, len(src))], "\n")
		pos = next
	}
	return vars, problems
}

// dotEnvValue reads the value that starts at src[at] on a line ending at
// end: the value, the end of the line where it ends (a quoted value may
// span lines), or what is wrong with it (stop -1 for a quote that never
// closes).
func dotEnvValue(src string, at, end int) (value string, stop int, problem string) {
	if at == end || (src[at] != '\'' && src[at] != '"') {
		v := src[at:end]
		if i := strings.Index(v, " #"); i >= 0 {
			v = v[:i]
		}
		if i := strings.Index(v, "\t#"); i >= 0 {
			v = v[:i]
		}
		return strings.TrimSpace(v), end, ""
	}
	q := src[at]
	var b strings.Builder
	for i := at + 1; i < len(src); i++ {
		c := src[i]
		switch {
		case c == q:
			stop = lineEnd(src, i)
			if tail := strings.TrimLeft(src[i+1:stop], " \t"); tail != "" && tail[0] != '#' {
				return "", 0, "the value goes on after its closing quote; quote all of it"
			}
			return b.String(), stop, ""
		case q == '"' && c == '\\' && i+1 < len(src):
			i++
			switch src[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(src[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", -1, "the value opens with " + string(q) + " but never closes it"
}

// lineEnd returns the index of the line feed ending the line that holds
// src[pos], or len(src).
func lineEnd(src string, pos int) int {
	if i := strings.IndexByte(src[pos:], '\n'); i >= 0 {
		return pos + i
	}
	return len(src)
}
