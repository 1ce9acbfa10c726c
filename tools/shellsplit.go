package tools

import "strings"

// simpleCommand is one command of a script as the refusal check sees it:
// its words, and whether its stdin comes from a pipe or a redirection.
type simpleCommand struct {
	words      []string
	fedStdin   bool
	afterPipe  bool
	redirected bool
}

// splitCommands splits a bash script into simple commands, well enough to
// find the program each one runs: it honours quotes, backslashes,
// comments, the operators ; & | && || ( ) and newlines, command
// substitution, and skips here-document bodies. It is a heuristic for a
// helpful refusal, not a security boundary (the sandbox is).
func splitCommands(script string) []simpleCommand {
	var (
		cmds      []simpleCommand
		cur       simpleCommand
		word      strings.Builder
		inWord    bool
		heredocs  []heredoc
		pendingHD bool // the next word is a here-document delimiter
		stripTabs bool
	)
	endWord := func() {
		if !inWord {
			return
		}
		w := word.String()
		word.Reset()
		inWord = false
		if pendingHD {
			heredocs = append(heredocs, heredoc{delim: w, stripTabs: stripTabs})
			pendingHD = false
			return
		}
		cur.words = append(cur.words, w)
	}
	endCommand := func(pipe bool) {
		endWord()
		if len(cur.words) > 0 || cur.redirected {
			cmds = append(cmds, cur)
		}
		cur = simpleCommand{afterPipe: pipe}
	}
	for i := 0; i < len(script); i++ {
		c := script[i]
		switch {
		case c == '\\' && i+1 < len(script):
			if script[i+1] != '\n' {
				word.WriteByte(script[i+1])
				inWord = true
			}
			i++
		case c == '\'':
			end := strings.IndexByte(script[i+1:], '\'')
			if end < 0 {
				end = len(script) - i - 1
			}
			word.WriteString(script[i+1 : i+1+end])
			inWord = true
			i += end + 1
		case c == '"':
			j := i + 1
			for ; j < len(script) && script[j] != '"'; j++ {
				if script[j] == '\\' && j+1 < len(script) {
					j++
				}
				word.WriteByte(script[j])
			}
			inWord = true
			i = j
		case c == '#' && !inWord:
			for i < len(script) && script[i] != '\n' {
				i++
			}
			i--
		case c == '\n':
			endCommand(false)
			i = skipHeredocs(script, i+1, heredocs) - 1
			heredocs = nil
		case c == ' ' || c == '\t':
			endWord()
		case c == '$' && i+1 < len(script) && script[i+1] == '(':
			endCommand(false)
			i++
		case c == ';' || c == '(' || c == ')' || c == '`':
			endCommand(false)
		case c == '&':
			if i+1 < len(script) && script[i+1] == '>' {
				endWord()
				i++ // &> file
				continue
			}
			endCommand(false)
			if i+1 < len(script) && script[i+1] == '&' {
				i++
			}
		case c == '|':
			if i+1 < len(script) && script[i+1] == '|' {
				endCommand(false)
				i++
			} else {
				endCommand(true)
			}
		case c == '<':
			endWord()
			cur.redirected = true
			cur.fedStdin = true
			if strings.HasPrefix(script[i:], "<<<") {
				i += 2
			} else if strings.HasPrefix(script[i:], "<<") {
				i++
				stripTabs = i+1 < len(script) && script[i+1] == '-'
				if stripTabs {
					i++
				}
				pendingHD = true
			}
		case c == '>':
			// A redirection's target is not an argument of the command;
			// digits just before it (2>) belong to the redirection.
			if inWord && isDigits(word.String()) {
				word.Reset()
				inWord = false
			}
			endWord()
			cur.redirected = true
			for i+1 < len(script) && (script[i+1] == '>' || script[i+1] == '&' || script[i+1] == '|') {
				i++
			}
			if i+1 < len(script) && isDigit(script[i+1]) {
				i++ // >&2
				continue
			}
			i = skipRedirectTarget(script, i+1) - 1
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endCommand(false)
	return cmds
}

type heredoc struct {
	delim     string
	stripTabs bool
}

// skipHeredocs returns the index after the bodies of docs starting at i.
func skipHeredocs(script string, i int, docs []heredoc) int {
	for _, d := range docs {
		for i < len(script) {
			end := strings.IndexByte(script[i:], '\n')
			var line string
			if end < 0 {
				line, i = script[i:], len(script)
			} else {
				line, i = script[i:i+end], i+end+1
			}
			if d.stripTabs {
				line = strings.TrimLeft(line, "\t")
			}
			if line == d.delim {
				break
			}
		}
	}
	return i
}

// skipRedirectTarget returns the index after the word following a
// redirection operator at i.
func skipRedirectTarget(script string, i int) int {
	for i < len(script) && (script[i] == ' ' || script[i] == '\t') {
		i++
	}
	for i < len(script) && !strings.ContainsRune(" \t\n;&|()<>", rune(script[i])) {
		switch script[i] {
		case '\'', '"':
			q := script[i]
			end := strings.IndexByte(script[i+1:], q)
			if end < 0 {
				return len(script)
			}
			i += end + 2
		default:
			i++
		}
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
