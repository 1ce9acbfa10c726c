package proof

import "strings"

// shellToken is a word or an operator of a shell command line.
type shellToken struct {
	word string
	op   string // "&&", "||", ";", "|", "&", "(", ")", or a redirection
}

// shellTokens splits a command line as a POSIX shell would into words and
// operators: quotes and backslashes are removed, comments dropped. plain is
// false when the line has what this reader does not follow: command
// substitution, variables, globs, here-documents, an unterminated quote.
func shellTokens(s string) (toks []shellToken, plain bool) {
	plain = true
	var w strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			toks = append(toks, shellToken{word: w.String()})
			w.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return toks, false
			}
			w.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			inWord = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				switch {
				case s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0:
					i++
					w.WriteByte(s[i])
				case s[i] == '$' || s[i] == '`':
					plain = false
					w.WriteByte(s[i])
				default:
					w.WriteByte(s[i])
				}
			}
			if i >= len(s) {
				return toks, false
			}
		case c == '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					w.WriteByte(s[i])
					inWord = true
				}
			}
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			for i < len(s) && s[i] != '\n' {
				i++
			}
			i--
		case c == '\n' || c == ';' || c == '(' || c == ')':
			flush()
			toks = append(toks, shellToken{op: string(c)})
		case c == '&' || c == '|':
			flush()
			if i+1 < len(s) && s[i+1] == c {
				toks = append(toks, shellToken{op: s[i : i+2]})
				i++
			} else {
				toks = append(toks, shellToken{op: string(c)})
			}
		case c == '>' || c == '<':
			// A redirection, with a file descriptor before it when the word
			// so far is a number: 2>&1, >out.txt, <in.
			op := ""
			if inWord && isDigits(w.String()) {
				op = w.String()
				w.Reset()
				inWord = false
			}
			flush()
			op += string(c)
			for i+1 < len(s) && (s[i+1] == '>' || s[i+1] == '&' || s[i+1] == '<' || s[i+1] == '|') {
				i++
				op += string(s[i])
			}
			if strings.HasSuffix(op, "&") {
				for i+1 < len(s) && (s[i+1] >= '0' && s[i+1] <= '9' || s[i+1] == '-') {
					i++
					op += string(s[i])
				}
			}
			if strings.HasPrefix(op, "<<") {
				plain = false
			}
			toks = append(toks, shellToken{op: op})
			plain = false
		case c == '$' || c == '`' || c == '*' || c == '?' || c == '~' && !inWord || c == '{' && !inWord:
			plain = false
			w.WriteByte(c)
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return toks, plain
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// simpleCommands returns the argument lists of the simple commands in a
// command line, redirections and their targets left out.
func simpleCommands(s string) [][]string {
	toks, _ := shellTokens(s)
	var out [][]string
	var cur []string
	redirect := false
	for _, t := range toks {
		switch {
		case t.op == "":
			if redirect {
				redirect = false
				continue
			}
			cur = append(cur, t.word)
		case strings.ContainsAny(t.op, "<>"):
			// A redirection to a file descriptor (2>&1) has no target word.
			redirect = !strings.Contains(t.op, "&") || strings.HasSuffix(t.op, "&")
		default:
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// words returns all words of a command line.
func words(s string) []string {
	var out []string
	for _, c := range simpleCommands(s) {
		out = append(out, c...)
	}
	return out
}

// quote returns s quoted for a POSIX shell when it needs quotes.
func quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%^") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
