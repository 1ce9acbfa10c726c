package tools

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

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

// versioned matches interpreter names with a version (python3.12).
var versioned = regexp.MustCompile(`^(python|ipython|pypy)[0-9.]*$`)

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=`)

// keywords precede a command without being one.
var keywords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "while": true, "until": true,
	"do": true, "!": true, "{": true, "}": true, "time": true, "fi": true, "done": true,
}

// wrappers run the command that follows their options.
var wrappers = map[string]bool{
	"sudo": true, "env": true, "nohup": true, "nice": true, "command": true, "exec": true,
	"builtin": true, "xargs": true, "timeout": true, "stdbuf": true, "ionice": true, "setsid": true,
}

// program returns the words of the program a simple command runs, past
// assignments, keywords and wrappers such as sudo, env and timeout.
func program(words []string) []string {
	for len(words) > 0 {
		w := words[0]
		switch {
		case assignment.MatchString(w) || keywords[w]:
			words = words[1:]
		case wrappers[path.Base(w)]:
			name := path.Base(w)
			words = words[1:]
			for len(words) > 0 && (strings.HasPrefix(words[0], "-") || assignment.MatchString(words[0])) {
				words = words[1:]
			}
			if name == "timeout" && len(words) > 0 {
				words = words[1:] // the duration
			}
		default:
			return words
		}
	}
	return nil
}

// refusal returns why the script cannot run, or "" when it may. textMode
// selects advice that does not name the editor tool.
func refusal(script string, textMode bool) string {
	for _, c := range splitCommands(script) {
		if why := refuseCommand(c, textMode); why != "" {
			return why
		}
	}
	return ""
}

// Programs refused, by kind.
var (
	editors  = []string{"vim", "vi", "nvim", "nano", "emacs", "pico", "joe", "micro", "mcedit", "ed", "ex", "kak", "hx"}
	pagers   = []string{"less", "more", "most", "pg"}
	monitors = []string{"top", "htop", "btop", "atop", "iotop", "nmon", "glances"}
	manuals  = []string{"man", "info"}
	repls    = []string{"python", "python2", "python3", "ipython", "ipython3", "node", "nodejs", "irb", "pry", "ghci", "R", "julia", "lua", "php", "psql", "mysql", "sqlite3", "gdb", "lldb", "bc"}
	sessions = []string{"tmux", "screen", "ssh", "telnet", "ftp", "sftp"}
	// scriptable editors run commands from a here-document or a pipe.
	scriptable = map[string]bool{"ed": true, "ex": true}
)

func refuseCommand(c simpleCommand, textMode bool) string {
	words := program(c.words)
	if len(words) == 0 {
		return ""
	}
	name := path.Base(words[0])
	shown := name
	if m := versioned.FindStringSubmatch(name); m != nil {
		name = m[1]
	}
	args := words[1:]
	editAdvice := "Edit files with the str_replace_editor tool, or with sed -i or a heredoc (cat <<'EOF' > file)."
	if textMode {
		editAdvice = "Edit files with sed -i, a heredoc (cat <<'EOF' > file) or a short python3 script."
	}
	switch {
	case slices.Contains(editors, name) && !(scriptable[name] && (c.fedStdin || c.afterPipe)):
		return fmt.Sprintf("`%s` is an interactive editor and cannot run here: there is no terminal. %s", name, editAdvice)
	case slices.Contains(pagers, name):
		return fmt.Sprintf("`%s` is an interactive pager and cannot run here: output is never paged, so run the command without it, and read files with cat, head, tail or sed -n '10,40p' FILE.", name)
	case slices.Contains(monitors, name):
		return fmt.Sprintf("`%s` is interactive and cannot run here; use `ps aux` for a snapshot of the processes.", name)
	case slices.Contains(manuals, name):
		return fmt.Sprintf("`%s` opens an interactive pager and cannot run here; use `%s --help` instead.", name, strings.Join(args, " "))
	case name == "watch":
		return "`watch` repeats a command on a terminal, which does not exist here; run the command once."
	case slices.Contains(sessions, name):
		return fmt.Sprintf("`%s` needs a terminal (and network), which do not exist here.", name)
	case (name == "tail" || name == "journalctl") && hasFlag(args, "f", "F", "--follow"):
		return fmt.Sprintf("`%s -f` follows output forever and would only stop at the time limit; use `%s -n 50` instead.", name, name)
	case slices.Contains(repls, name) && (len(args) == 0 || (hasFlag(args, "i") && name == "python")) && !c.fedStdin && !c.afterPipe:
		return fmt.Sprintf("`%s` without a script starts an interactive session, which cannot run here; give it a file to run, code as an argument (python3 -c '...'), or a heredoc on stdin.", strings.Join(append([]string{shown}, args...), " "))
	case name == "git":
		return refuseGit(args)
	}
	return ""
}

// refuseGit refuses git commands that open an editor or ask interactively.
func refuseGit(args []string) string {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		// Global options; -C and -c take a value.
		if args[0] == "-C" || args[0] == "-c" {
			args = args[1:]
		}
		args = args[1:]
	}
	if len(args) == 0 {
		return ""
	}
	sub, rest := args[0], args[1:]
	switch {
	case (sub == "rebase" || sub == "clean") && hasFlag(rest, "i", "--interactive"):
		return fmt.Sprintf("`git %s -i` is interactive and cannot run here; use the non-interactive form, or leave the history alone: your change is taken from the working tree.", sub)
	case slices.Contains([]string{"add", "checkout", "reset", "restore", "stash", "commit"}, sub) && hasFlag(rest, "p", "i", "--patch", "--interactive"):
		return fmt.Sprintf("`git %s --patch/--interactive` asks questions interactively and cannot run here; name the files instead.", sub)
	case sub == "mergetool" || sub == "difftool":
		return fmt.Sprintf("`git %s` starts an interactive tool and cannot run here; edit the conflicting files directly.", sub)
	case sub == "commit" && !hasFlag(rest, "m", "F", "C", "--message", "--file", "--reuse-message", "--no-edit"):
		return "`git commit` without -m opens an editor, which cannot run here. You also do not need to commit: your change is taken from the working tree."
	}
	return ""
}

// hasFlag reports whether args hold one of the flags: single letters match
// short options, also inside clusters (-am); names starting with -- match
// long options, also as --name=value. In a cluster, the letters after one
// that takes a value (-mfix: m's value is "fix") are not options.
func hasFlag(args []string, flags ...string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		for _, f := range flags {
			switch {
			case strings.HasPrefix(f, "--"):
				if a == f || strings.HasPrefix(a, f+"=") {
					return true
				}
			case len(a) >= 2 && a[0] == '-' && a[1] != '-':
				if shortOptions(a[1:]) != "" && strings.Contains(shortOptions(a[1:]), f) {
					return true
				}
			}
		}
	}
	return false
}

// valueOptions are short options that take a value (git commit -m, -F, -C,
// -c; python -c, -m), so what follows them in a cluster is that value.
const valueOptions = "mFCc"

// shortOptions returns the option letters of a cluster up to and including
// the first one that takes a value.
func shortOptions(cluster string) string {
	if i := strings.IndexAny(cluster, valueOptions); i >= 0 {
		return cluster[:i+1]
	}
	return cluster
}
