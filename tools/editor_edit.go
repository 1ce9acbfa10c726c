package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/agentfix/agentfix/workspace"
)

// snippetContext is how many lines around an edit its snippet shows.
const snippetContext = 4

// quoteLimit bounds how much of old_str a message repeats.
const quoteLimit = 600

// create writes a new file, refusing to overwrite anything.
func (ed *editor) create(rel, shown string, fileText *string) string {
	if fileText == nil {
		return "Parameter `file_text` is required for command: create."
	}
	if fi, err := ed.root.Lstat(rel); err == nil {
		if fi.IsDir() {
			return fmt.Sprintf("The path %s is a directory; `create` makes a new file.", shown)
		}
		return fmt.Sprintf("File already exists at: %s. Cannot overwrite files using command `create`.", shown)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return describe(err, shown)
	}
	if dir := path.Dir(rel); dir != "." {
		if err := ed.root.MkdirAll(dir, 0o755); err != nil {
			return describe(err, path.Join(workspace.WorkspaceDir, dir))
		}
	}
	f, err := ed.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return describe(err, shown)
	}
	_, err = f.WriteString(*fileText)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return describe(err, shown)
	}
	ed.history[rel] = append(ed.history[rel], snapshot{existed: false})
	return fmt.Sprintf("File created successfully at: %s", shown)
}

// strReplace replaces the one occurrence of oldStr.
func (ed *editor) strReplace(rel, shown string, oldStr, newStr *string) string {
	if oldStr == nil {
		return "Parameter `old_str` is required for command: str_replace."
	}
	if *oldStr == "" {
		return "Parameter `old_str` is empty; give the exact text to replace, with enough surrounding lines to make it unique."
	}
	old, repl := *oldStr, ""
	if newStr != nil {
		repl = *newStr
	}
	content, bad := ed.readText(rel, shown)
	if bad != "" {
		return bad
	}
	old, repl = matchLineEndings(content, old, repl)
	switch n := strings.Count(content, old); {
	case n == 0:
		return noMatch(content, old, shown)
	case n > 1:
		return fmt.Sprintf("No replacement was performed. Multiple occurrences of old_str `%s` in %s. Please ensure it is unique: include more of the surrounding lines in old_str.", quote(old), fmtLines(occurrences(content, old)))
	}
	if old == repl {
		return "No replacement was performed: old_str and new_str are the same."
	}
	idx := strings.Index(content, old)
	edited := content[:idx] + repl + content[idx+len(old):]
	if err := ed.write(rel, edited); err != nil {
		return describe(err, shown)
	}
	ed.history[rel] = append(ed.history[rel], snapshot{content: []byte(content), existed: true})
	line := strings.Count(content[:idx], "\n")
	lines := splitLines(edited)
	start := max(0, line-snippetContext)
	end := min(len(lines), line+snippetContext+strings.Count(repl, "\n")+1)
	return fmt.Sprintf("The file %s has been edited. Here's the result of running `cat -n` on a snippet of %s:\n%sReview the changes and make sure they are as expected. Edit the file again if necessary.",
		shown, shown, ed.clipView(numbered(lines[start:end], start+1)))
}

// insert inserts newStr after line insertLine.
func (ed *editor) insert(rel, shown string, insertLine *int, newStr *string) string {
	if insertLine == nil {
		return "Parameter `insert_line` is required for command: insert."
	}
	if newStr == nil {
		return "Parameter `new_str` is required for command: insert."
	}
	content, bad := ed.readText(rel, shown)
	if bad != "" {
		return bad
	}
	lines := splitLines(content)
	at := *insertLine
	if at < 0 || at > len(lines) {
		return fmt.Sprintf("Invalid `insert_line` parameter: %d. It should be within the range of lines of the file: [0, %d]", at, len(lines))
	}
	added := splitLines(*newStr)
	if len(added) == 0 {
		added = []string{""}
	}
	result := make([]string, 0, len(lines)+len(added))
	result = append(append(append(result, lines[:at]...), added...), lines[at:]...)
	edited := strings.Join(result, "\n")
	if content == "" || strings.HasSuffix(content, "\n") {
		edited += "\n"
	}
	if err := ed.write(rel, edited); err != nil {
		return describe(err, shown)
	}
	ed.history[rel] = append(ed.history[rel], snapshot{content: []byte(content), existed: true})
	start := max(0, at-snippetContext)
	end := min(len(result), at+len(added)+snippetContext)
	return fmt.Sprintf("The file %s has been edited. Here's the result of running `cat -n` on a snippet of the edited file:\n%sReview the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.",
		shown, ed.clipView(numbered(result[start:end], start+1)))
}

// undo restores the file as it was before the last edit of this tool.
func (ed *editor) undo(rel, shown string) string {
	stack := ed.history[rel]
	if len(stack) == 0 {
		return fmt.Sprintf("No edit history found for %s.", shown)
	}
	last := stack[len(stack)-1]
	if !last.existed {
		if err := ed.root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return describe(err, shown)
		}
		ed.history[rel] = stack[:len(stack)-1]
		return fmt.Sprintf("Last edit to %s undone successfully: the file did not exist before `create`, so it was removed.", shown)
	}
	if err := ed.write(rel, string(last.content)); err != nil {
		return describe(err, shown)
	}
	ed.history[rel] = stack[:len(stack)-1]
	lines := splitLines(string(last.content))
	return fmt.Sprintf("Last edit to %s undone successfully. Here's the result of running `cat -n` on %s:\n%s", shown, shown, ed.clipView(numbered(lines, 1)))
}

// matchLineEndings adapts old and repl written with \n to a file with
// Windows line endings, when only that keeps old from matching.
func matchLineEndings(content, old, repl string) (string, string) {
	if strings.Contains(old, "\r") || !strings.Contains(old, "\n") || !strings.Contains(content, "\r\n") || strings.Contains(content, old) {
		return old, repl
	}
	crlf := strings.ReplaceAll(old, "\n", "\r\n")
	if !strings.Contains(content, crlf) {
		return old, repl
	}
	if !strings.Contains(repl, "\r") {
		repl = strings.ReplaceAll(repl, "\n", "\r\n")
	}
	return crlf, repl
}

// noMatch explains a str_replace whose old_str is not in the file, with the
// lines where it matches apart from whitespace, or where its first line is.
func noMatch(content, old, shown string) string {
	msg := fmt.Sprintf("No replacement was performed, old_str `%s` did not appear verbatim in %s.", quote(old), shown)
	if at := looseMatches(content, old); len(at) > 0 {
		msg += fmt.Sprintf(" It matches apart from whitespace at %s: copy the text exactly as `view` shows it there, with the same indentation (tabs stay tabs) and spacing.", fmtLines(at))
	} else if first := strings.TrimSpace(strings.SplitN(strings.TrimLeft(old, "\n"), "\n", 2)[0]); first != "" && strings.Contains(old, "\n") {
		if at := looseMatches(content, first); len(at) > 0 {
			msg += fmt.Sprintf(" Its first line appears at %s, but the lines after it differ: view that region and copy it exactly.", fmtLines(at))
		}
	}
	if strings.Contains(content, "\r\n") && !strings.Contains(old, "\r") && strings.Contains(old, "\n") {
		msg += " The file has Windows line endings (\\r\\n)."
	}
	return msg
}

// looseMatches returns the 1-based lines where old matches the content
// when runs of whitespace are treated as equal and ignored at line ends.
// old may start and end in the middle of a line.
func looseMatches(content, old string) []int {
	want := splitLines(strings.Trim(old, "\n"))
	for i := range want {
		want[i] = squash(want[i])
	}
	if len(want) == 0 || strings.Join(want, "") == "" {
		return nil
	}
	lines := splitLines(content)
	var at []int
	for i := 0; i+len(want) <= len(lines) && len(at) < 10; i++ {
		if looseAt(lines[i:i+len(want)], want) {
			at = append(at, i+1)
		}
	}
	return at
}

func looseAt(lines, want []string) bool {
	if len(want) == 1 {
		return strings.Contains(squash(lines[0]), want[0])
	}
	last := len(want) - 1
	if !strings.HasSuffix(squash(lines[0]), want[0]) || !strings.HasPrefix(squash(lines[last]), want[last]) {
		return false
	}
	for i := 1; i < last; i++ {
		if squash(lines[i]) != want[i] {
			return false
		}
	}
	return true
}

// squash collapses whitespace runs to one space and trims the ends.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// occurrences returns the 1-based lines where each occurrence of old starts.
func occurrences(content, old string) []int {
	var at []int
	for off := 0; ; {
		i := strings.Index(content[off:], old)
		if i < 0 {
			return at
		}
		at = append(at, strings.Count(content[:off+i], "\n")+1)
		off += i + len(old)
	}
}

// fmtLines renders line numbers: "line 3", "lines 3 and 10", "lines 3, 10
// and 17".
func fmtLines(at []int) string {
	s := make([]string, len(at))
	for i, n := range at {
		s[i] = fmt.Sprint(n)
	}
	if len(s) == 1 {
		return "line " + s[0]
	}
	return "lines " + strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// quote shortens a long old_str for a message.
func quote(s string) string { return workspace.Clip(s, quoteLimit) }
