package tools

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/agentfix/agentfix/workspace"
)

// maxEditFileSize bounds the files the editor reads.
const maxEditFileSize = 8 << 20

// viewNoteRoom is what a view leaves of the tool's output limit for the
// note that follows a cut, so the note is never cut itself.
const viewNoteRoom = 256

// snapshot is a file's state before one edit.
type snapshot struct {
	content []byte
	existed bool
}

// editor is str_replace_editor: it works in the worker on the working copy
// through an os.Root, so no path or symbolic link reaches outside it.
type editor struct {
	root      *os.Root
	viewLimit int // bounds a view or snippet

	mu      sync.Mutex
	history map[string][]snapshot // by cleaned path relative to the root
}

// newEditor returns an editor of the working copy at root whose views fit
// in outputLimit bytes.
func newEditor(root *os.Root, outputLimit int) *editor {
	return &editor{root: root, viewLimit: max(outputLimit-viewNoteRoom, outputLimit/2), history: map[string][]snapshot{}}
}

// run executes one editor call and returns what the model sees.
func (ed *editor) run(a editorArgs) string {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	rel, shown, bad := resolvePath(*a.Path)
	if bad != "" {
		return bad
	}
	switch *a.Command {
	case "view":
		return ed.view(rel, shown, a.ViewRange)
	case "create":
		return ed.create(rel, shown, a.FileText)
	case "str_replace":
		return ed.strReplace(rel, shown, a.OldStr, a.NewStr)
	case "insert":
		return ed.insert(rel, shown, a.InsertLine, a.NewStr)
	case "undo_edit":
		return ed.undo(rel, shown)
	}
	return fmt.Sprintf("Unrecognized command %s. The allowed commands for the %s tool are: view, create, str_replace, insert, undo_edit", *a.Command, EditorTool)
}

// resolvePath turns a path given relative to /workspace or absolute under
// it into a clean path relative to the root, and the absolute path shown
// to the model. bad explains a path that leaves the repository.
func resolvePath(p string) (rel, shown, bad string) {
	if p == "" {
		return "", "", "The `path` parameter is empty; give a file or directory under " + workspace.WorkspaceDir + "."
	}
	if path.IsAbs(p) {
		clean := path.Clean(p)
		switch {
		case clean == workspace.WorkspaceDir:
			rel = "."
		case strings.HasPrefix(clean, workspace.WorkspaceDir+"/"):
			rel = strings.TrimPrefix(clean, workspace.WorkspaceDir+"/")
		default:
			return "", "", fmt.Sprintf("The path %s is outside the repository. Paths must be relative to %s or absolute under it, e.g. %s/src/main.go.", p, workspace.WorkspaceDir, workspace.WorkspaceDir)
		}
	} else {
		if !filepath.IsLocal(p) {
			return "", "", fmt.Sprintf("The path %s leaves the repository. Paths must stay under %s; `..` may not climb above it.", p, workspace.WorkspaceDir)
		}
		rel = path.Clean(p)
	}
	return rel, path.Join(workspace.WorkspaceDir, rel), ""
}

// describe explains a file system error about shown to the model.
func describe(err error, shown string) string {
	var errno syscall.Errno
	switch {
	case err != nil && strings.Contains(err.Error(), "path escapes from parent"):
		return fmt.Sprintf("The path %s goes through a symbolic link that points outside the repository (or is absolute), which this tool does not follow. Use the path of the link's target under %s instead.", shown, workspace.WorkspaceDir)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("The path %s does not exist. Please provide a valid path.", shown)
	case errors.As(err, &errno) && errno == syscall.ENOTDIR:
		return fmt.Sprintf("The path %s does not exist: a part of it is a file, not a directory.", shown)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("Permission denied: %s.", shown)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Sprintf("Cannot access %s: %v.", shown, err)
}

// readText reads a regular text file; bad explains why it cannot be used.
// A FIFO or device planted by the sandbox is never read (the open does
// not block, and only regular files are read).
func (ed *editor) readText(rel, shown string) (text string, bad string) {
	f, err := ed.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", describe(err, shown)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return "", describe(err, shown)
	case fi.IsDir():
		return "", fmt.Sprintf("The path %s is a directory and only the `view` command can be used on directories.", shown)
	case !fi.Mode().IsRegular():
		return "", fmt.Sprintf("The path %s is not a regular file.", shown)
	case fi.Size() > maxEditFileSize:
		return "", fmt.Sprintf("The file %s has %d bytes, too many for this tool (at most %d). Search it with grep -n and print parts with sed -n '100,150p' in bash.", shown, fi.Size(), maxEditFileSize)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxEditFileSize+1))
	if err != nil {
		return "", describe(err, shown)
	}
	if slices.Contains(b[:min(len(b), 8000)], 0) {
		return "", fmt.Sprintf("The file %s is binary, not text; inspect it with a command such as `xxd %s | head`.", shown, shown)
	}
	return strings.ToValidUTF8(string(b), string(utf8.RuneError)), ""
}

// write replaces the content of an existing file, keeping its mode.
func (ed *editor) write(rel string, content string) error {
	f, err := ed.root.OpenFile(rel, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// splitLines splits text into lines without their newlines; a final
// newline does not start another line.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// numbered renders lines like `cat -n`, the first numbered first.
func numbered(lines []string, first int) string {
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "%6d\t%s\n", first+i, l)
	}
	return b.String()
}

// clipView cuts a long view and says how to see the rest.
func (ed *editor) clipView(s string) string {
	if len(s) <= ed.viewLimit {
		return s
	}
	return workspace.Clip(s, ed.viewLimit) + "\n[This view is long and was cut in the middle; view parts of it with view_range, or search with grep -n.]\n"
}

// view shows a file with line numbers, or a directory two levels deep.
func (ed *editor) view(rel, shown string, viewRange []int) string {
	fi, err := ed.root.Stat(rel)
	if err != nil {
		return describe(err, shown)
	}
	if fi.IsDir() {
		if viewRange != nil {
			return "The `view_range` parameter is not allowed when `path` points to a directory."
		}
		return ed.viewDir(rel, shown)
	}
	text, bad := ed.readText(rel, shown)
	if bad != "" {
		return bad
	}
	lines := splitLines(text)
	start, end := 1, len(lines)
	if viewRange != nil {
		if len(viewRange) != 2 {
			return "Invalid `view_range`. It should be a list of two integers."
		}
		start, end = viewRange[0], viewRange[1]
		n := len(lines)
		switch {
		case start < 1 || start > n:
			return fmt.Sprintf("Invalid `view_range`: %v. Its first element `%d` should be within the range of lines of the file: [1, %d].", fmtRange(viewRange), start, n)
		case end == -1:
			end = n
		case end < start:
			return fmt.Sprintf("Invalid `view_range`: %v. Its second element `%d` should be larger or equal than its first `%d`.", fmtRange(viewRange), end, start)
		case end > n:
			return fmt.Sprintf("Invalid `view_range`: %v. Its second element `%d` should be at most the number of lines in the file: `%d` (or -1 for the end of the file).", fmtRange(viewRange), end, n)
		}
	}
	head := fmt.Sprintf("Here's the result of running `cat -n` on %s:\n", shown)
	if len(lines) == 0 {
		return head + "(the file is empty)\n"
	}
	return ed.clipView(head + numbered(lines[start-1:end], start))
}

func fmtRange(r []int) string { return fmt.Sprintf("[%d, %d]", r[0], r[1]) }

// viewDir lists a directory two levels deep, hidden entries excluded,
// directories marked with a slash and symbolic links with their target
// (listed, never entered).
func (ed *editor) viewDir(rel, shown string) string {
	fsys := ed.root.FS()
	var b strings.Builder
	fmt.Fprintf(&b, "Here are the files and directories up to 2 levels deep in %s, excluding hidden items:\n%s/\n", shown, shown)
	var list func(dir string, depth int) error
	list = func(dir string, depth int) error {
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p := path.Join(dir, e.Name())
			name := path.Join(workspace.WorkspaceDir, p)
			switch {
			case e.IsDir():
				name += "/"
			case e.Type()&fs.ModeSymlink != 0:
				if target, err := ed.root.Readlink(p); err == nil {
					name += " -> " + target
				}
			}
			b.WriteString(name + "\n")
			if e.IsDir() && depth < 2 {
				if err := list(p, depth+1); err != nil {
					fmt.Fprintf(&b, "%s  (cannot list: %v)\n", name, unwrapPath(err))
				}
			}
		}
		return nil
	}
	if err := list(rel, 1); err != nil {
		return describe(err, shown)
	}
	return ed.clipView(b.String())
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
