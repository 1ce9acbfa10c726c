package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ed builds a str_replace_editor call; args are name, value pairs.
func ed(command, path string, args ...any) map[string]any {
	m := map[string]any{"command": command, "path": path}
	for i := 0; i < len(args); i += 2 {
		m[args[i].(string)] = args[i+1]
	}
	return m
}

func TestEditor(t *testing.T) {
	e := newTestEnv(t, nil)
	root := e.wt.Dir()
	writeFiles(t, root, map[string]string{
		"pkg/sub/deep/file.go": "package deep\n",
		".hidden/secret.txt":   "hidden\n",
		"multi.txt":            "x := 1\nfoo\nx := 1\n",
		"crlf.txt":             "one\r\ntwo\r\n",
		"empty.txt":            "",
	})
	// A file next to the working copy, in the job's cache directory.
	outside := filepath.Join(e.wt.CacheDir(), "outside.txt")
	writeFiles(t, e.wt.CacheDir(), map[string]string{"outside.txt": "OUTSIDE\n"})
	planted := e.bash(t, "ln -s /etc etclink && ln -s ../cache/outside.txt uplink && ln -s /workspace/README.md abslink && ln -s README.md rellink && mkfifo pipe && printf 'bin\\000ary' > blob.bin && echo planted")
	if planted != "planted\n[exit code 0]" {
		t.Fatalf("planting from the sandbox: %q", planted)
	}
	original, _ := os.ReadFile(filepath.Join(root, "calc/calc.go"))

	steps := []struct {
		title string
		args  map[string]any
	}{
		{"view the repository two levels deep", ed("view", "/workspace")},
		{"view a file: tabs kept", ed("view", "calc/calc.go")},
		{"view a range to the end", ed("view", "/workspace/calc/calc.go", "view_range", []int{4, -1})},
		{"view range starting at 0", ed("view", "calc/calc.go", "view_range", []int{0, 2})},
		{"view range backwards", ed("view", "calc/calc.go", "view_range", []int{4, 2})},
		{"view range past the end", ed("view", "calc/calc.go", "view_range", []int{1, 99})},
		{"view range of one number", ed("view", "calc/calc.go", "view_range", []int{1})},
		{"view range on a directory", ed("view", "calc", "view_range", []int{1, 2})},
		{"view an empty file", ed("view", "empty.txt")},
		{"view a missing file", ed("view", "calc/missing.go")},
		{"str_replace with spaces for a tab", ed("str_replace", "calc/calc.go", "old_str", "    return a - b", "new_str", "    return a + b")},
		{"str_replace whose first line matches", ed("str_replace", "calc/calc.go", "old_str", "func Add(a, b int) int {\n\treturn a * b", "new_str", "x")},
		{"str_replace with many matches", ed("str_replace", "multi.txt", "old_str", "x := 1", "new_str", "x := 2")},
		{"str_replace on CRLF text", ed("str_replace", "crlf.txt", "old_str", "one\ntwo", "new_str", "1\n2")},
		{"str_replace that misses in CRLF text", ed("str_replace", "crlf.txt", "old_str", "1\nthree", "new_str", "x")},
		{"str_replace with an empty old_str", ed("str_replace", "calc/calc.go", "old_str", "", "new_str", "x")},
		{"str_replace without old_str", ed("str_replace", "calc/calc.go", "new_str", "x")},
		{"str_replace the same text", ed("str_replace", "calc/calc.go", "old_str", "a - b", "new_str", "a - b")},
		{"str_replace: first edit", ed("str_replace", "calc/calc.go", "old_str", "\treturn a - b", "new_str", "\treturn a + b")},
		{"insert: second edit", ed("insert", "calc/calc.go", "insert_line", 2, "new_str", "// Package calc adds.\n")},
		{"insert past the end", ed("insert", "calc/calc.go", "insert_line", 42, "new_str", "x")},
		{"insert without insert_line", ed("insert", "calc/calc.go", "new_str", "x")},
		{"undo the insert", ed("undo_edit", "calc/calc.go")},
		{"undo the str_replace", ed("undo_edit", "/workspace/calc/calc.go")},
		{"undo with no history left", ed("undo_edit", "calc/calc.go")},
		{"create over an existing file", ed("create", "README.md", "file_text", "new")},
		{"create over a directory", ed("create", "calc", "file_text", "new")},
		{"create without file_text", ed("create", "notes.txt")},
		{"create in a new directory", ed("create", "docs/new/notes.md", "file_text", "# Notes\n\tindented\n")},
		{"undo the create", ed("undo_edit", "docs/new/notes.md")},
		{"str_replace on a directory", ed("str_replace", "calc", "old_str", "a", "new_str", "b")},
		{"unknown command", ed("delete", "README.md")},
		{"escape with ..", ed("view", "../../etc/passwd")},
		{"escape with .. inside a path", ed("view", "calc/../../x")},
		{"absolute path outside", ed("view", "/etc/passwd")},
		{"absolute path climbing out", ed("view", "/workspace/../etc/passwd")},
		{"escape through a symlink to /etc", ed("view", "etclink/passwd")},
		{"escape through a relative symlink", ed("view", "uplink")},
		{"create through a symlink", ed("create", "etclink/agentfix-test", "file_text", "x")},
		{"absolute symlink inside", ed("view", "abslink")},
		{"relative symlink inside", ed("view", "rellink")},
		{"a FIFO is not read", ed("str_replace", "pipe", "old_str", "a", "new_str", "b")},
		{"a binary file", ed("view", "blob.bin")},
	}
	var transcript strings.Builder
	for _, s := range steps {
		obs := e.exec(t, call(EditorTool, s.args))
		fmt.Fprintf(&transcript, "### %s\n%v\n---\n%s\n\n", s.title, s.args, obs.Output)
	}
	golden(t, "editor", transcript.String())

	// Two edits undone leave the file byte for byte as it was.
	if got, _ := os.ReadFile(filepath.Join(root, "calc/calc.go")); string(got) != string(original) {
		t.Errorf("calc.go after two undos:\n%q\nwant\n%q", got, original)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "crlf.txt")); string(got) != "1\r\n2\r\n" {
		t.Errorf("crlf.txt = %q, want the CRLF line endings kept", got)
	}
	if _, err := os.Stat(filepath.Join(root, "docs/new/notes.md")); !os.IsNotExist(err) {
		t.Errorf("undo of create left the file (err %v)", err)
	}
	if _, err := os.Stat("/etc/agentfix-test"); !os.IsNotExist(err) {
		os.Remove("/etc/agentfix-test")
		t.Errorf("create through a symlink wrote outside the working copy")
	}
	if got, _ := os.ReadFile(outside); string(got) != "OUTSIDE\n" {
		t.Errorf("file outside the working copy changed: %q", got)
	}
}

func TestEditorEditsWhatTheSandboxSees(t *testing.T) {
	e := newTestEnv(t, nil)
	e.exec(t, call(EditorTool, ed("str_replace", "calc/calc.go", "old_str", "\treturn a - b", "new_str", "\treturn a + b")))
	if got := e.bash(t, "grep -c $'\\treturn a + b' calc/calc.go"); got != "1\n[exit code 0]" {
		t.Errorf("the sandbox sees %q matching lines, want 1 with the tab kept", got)
	}
	e.exec(t, call(EditorTool, ed("create", "/workspace/notes/plan.txt", "file_text", "plan\n")))
	if got := e.bash(t, "cat notes/plan.txt"); got != "plan\n[exit code 0]" {
		t.Errorf("the sandbox reads %q, want %q", got, "plan\n[exit code 0]")
	}
	// An edit after bash changed the file works on the current content.
	e.bash(t, "sed -i 's/plan/PLAN/' notes/plan.txt")
	obs := e.exec(t, call(EditorTool, ed("str_replace", "notes/plan.txt", "old_str", "PLAN", "new_str", "done")))
	if !strings.Contains(obs.Output, "has been edited") {
		t.Errorf("edit after a bash change: %s", obs.Output)
	}
}

func TestEditorUndoSeveralEditsOfSeveralFiles(t *testing.T) {
	e := newTestEnv(t, nil)
	root := e.wt.Dir()
	read := func(p string) string {
		b, _ := os.ReadFile(filepath.Join(root, p))
		return string(b)
	}
	readme0, calc0 := read("README.md"), read("calc/calc.go")
	e.exec(t, call(EditorTool, ed("insert", "README.md", "insert_line", 1, "new_str", "one")))
	readme1 := read("README.md")
	e.exec(t, call(EditorTool, ed("str_replace", "calc/calc.go", "old_str", "a - b", "new_str", "a + b")))
	e.exec(t, call(EditorTool, ed("insert", "README.md", "insert_line", 2, "new_str", "two")))
	if got := read("README.md"); got != "# calc\none\ntwo\n" {
		t.Fatalf("README.md = %q after two inserts", got)
	}
	for _, step := range []struct{ path, want string }{
		{"README.md", readme1}, {"README.md", readme0}, {"calc/calc.go", calc0},
	} {
		e.exec(t, call(EditorTool, ed("undo_edit", step.path)))
		if got := read(step.path); got != step.want {
			t.Errorf("after undo of %s: %q, want %q", step.path, got, step.want)
		}
	}
}
