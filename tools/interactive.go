package tools

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

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

// refuseCommand returns why one simple command cannot run, or "".
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
		topic := "COMMAND"
		if len(args) > 0 {
			topic = args[len(args)-1]
		}
		return fmt.Sprintf("`%s` opens an interactive pager and cannot run here; use `%s --help` instead.", name, topic)
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
