package proof

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// fileDiff is one file of a unified diff.
type fileDiff struct {
	oldPath, newPath string // "" for /dev/null
	added, deleted   bool
	binary           bool
	hunks            []hunk
}

// path returns the file's path after the change, or before it for a
// deleted file.
func (f fileDiff) path() string {
	if f.newPath != "" {
		return f.newPath
	}
	return f.oldPath
}

type hunk struct {
	oldStart, newStart int
	lines              []diffLine
}

// diffLine is a line of a hunk: ' ', '-' or '+', with its line number in
// the old file (context and removed lines) and the new file (context and
// added lines).
type diffLine struct {
	op               byte
	text             string
	oldLine, newLine int
}

var (
	gitHeaderRE = regexp.MustCompile(`^diff --git (.+)$`)
	hunkRE      = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)
)

// parseDiff reads a unified diff as git diff writes it (renames, new and
// deleted files, binary files, quoted paths), or as diff -u does.
func parseDiff(s string) ([]fileDiff, error) {
	ls := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	if len(ls) > 0 && ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	var files []fileDiff
	var cur *fileDiff
	for i := 0; i < len(ls); i++ {
		l := ls[i]
		switch {
		case gitHeaderRE.MatchString(l):
			files = append(files, fileDiff{})
			cur = &files[len(files)-1]
			a, b := splitGitHeader(gitHeaderRE.FindStringSubmatch(l)[1])
			cur.oldPath, cur.newPath = a, b
		case strings.HasPrefix(l, "--- ") && i+1 < len(ls) && strings.HasPrefix(ls[i+1], "+++ "):
			if cur == nil || len(cur.hunks) > 0 {
				files = append(files, fileDiff{})
				cur = &files[len(files)-1]
			}
			cur.oldPath = diffPath(strings.TrimPrefix(l, "--- "), "a/")
			cur.newPath = diffPath(strings.TrimPrefix(ls[i+1], "+++ "), "b/")
			cur.added, cur.deleted = cur.oldPath == "", cur.newPath == ""
			i++
		case cur == nil:
			// Text before the first file (a commit message): ignored.
		case strings.HasPrefix(l, "new file mode"):
			cur.added, cur.oldPath = true, ""
		case strings.HasPrefix(l, "deleted file mode"):
			cur.deleted, cur.newPath = true, ""
		case strings.HasPrefix(l, "rename from "):
			cur.oldPath = unquotePath(strings.TrimPrefix(l, "rename from "))
		case strings.HasPrefix(l, "rename to "):
			cur.newPath = unquotePath(strings.TrimPrefix(l, "rename to "))
		case strings.HasPrefix(l, "Binary files ") || l == "GIT binary patch":
			cur.binary = true
		case hunkRE.MatchString(l):
			m := hunkRE.FindStringSubmatch(l)
			oldStart, _ := strconv.Atoi(m[1])
			newStart, _ := strconv.Atoi(m[3])
			oldN, newN := 1, 1
			if m[2] != "" {
				oldN, _ = strconv.Atoi(m[2])
			}
			if m[4] != "" {
				newN, _ = strconv.Atoi(m[4])
			}
			h := hunk{oldStart: oldStart, newStart: newStart}
			o, n := oldStart, newStart
			for oldN > 0 || newN > 0 {
				i++
				if i >= len(ls) {
					return files, fmt.Errorf("diff of %s: hunk at line %d ends early", cur.path(), i)
				}
				hl := ls[i]
				if strings.HasPrefix(hl, `\ `) {
					continue // "\ No newline at end of file"
				}
				op := byte(' ')
				if hl != "" {
					op = hl[0]
				}
				text := ""
				if len(hl) > 0 {
					text = hl[1:]
				}
				switch op {
				case ' ':
					h.lines = append(h.lines, diffLine{' ', text, o, n})
					o, n, oldN, newN = o+1, n+1, oldN-1, newN-1
				case '-':
					h.lines = append(h.lines, diffLine{'-', text, o, 0})
					o, oldN = o+1, oldN-1
				case '+':
					h.lines = append(h.lines, diffLine{'+', text, 0, n})
					n, newN = n+1, newN-1
				default:
					return files, fmt.Errorf("diff of %s: line %d in a hunk starts with %q", cur.path(), i+1, op)
				}
				if oldN < 0 || newN < 0 {
					return files, fmt.Errorf("diff of %s: hunk at line %d is longer than its header says", cur.path(), i+1)
				}
			}
			for i+1 < len(ls) && strings.HasPrefix(ls[i+1], `\ `) {
				i++
			}
			cur.hunks = append(cur.hunks, h)
		}
	}
	return files, nil
}

// splitGitHeader splits the paths of "diff --git a/x b/x". Paths with
// spaces are ambiguous there; the ---/+++ and rename lines that follow set
// them again.
func splitGitHeader(s string) (string, string) {
	if strings.HasPrefix(s, `"`) {
		if end := closingQuote(s); end > 0 {
			a := unquotePath(s[:end+1])
			b := strings.TrimSpace(s[end+1:])
			return strings.TrimPrefix(a, "a/"), strings.TrimPrefix(unquotePath(b), "b/")
		}
	}
	if i := strings.Index(s, " b/"); i >= 0 {
		return strings.TrimPrefix(s[:i], "a/"), strings.TrimPrefix(unquotePath(s[i+1:]), "b/")
	}
	return s, s
}

func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// diffPath returns the path of a ---/+++ line: "" for /dev/null, the
// prefix (a/, b/) and a trailing tab-separated timestamp removed.
func diffPath(s, prefix string) string {
	if t, _, ok := strings.Cut(s, "\t"); ok && !strings.HasPrefix(s, `"`) {
		s = t
	}
	s = unquotePath(s)
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(s, prefix)
}

// unquotePath undoes git's C-style quoting of unusual paths.
func unquotePath(s string) string {
	if strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}

// FilePatch is one file of a git diff: its paths ("" for /dev/null) and its
// part of the diff text, which git apply takes on its own.
type FilePatch struct {
	OldPath, NewPath string
	Text             string
}

// Path is the file's path after the change, or before it when deleted.
func (f FilePatch) Path() string {
	if f.NewPath != "" {
		return f.NewPath
	}
	return f.OldPath
}

// SplitDiff splits a git diff into its files.
func SplitDiff(diff string) ([]FilePatch, error) {
	files, err := parseDiff(diff)
	if err != nil {
		return nil, err
	}
	var texts []string
	start := -1
	lines := strings.SplitAfter(diff, "\n")
	var b strings.Builder
	for i, l := range lines {
		if strings.HasPrefix(l, "diff --git ") {
			if start >= 0 {
				texts = append(texts, b.String())
				b.Reset()
			}
			start = i
		}
		if start >= 0 {
			b.WriteString(l)
		}
	}
	if start >= 0 {
		texts = append(texts, b.String())
	}
	if len(texts) != len(files) {
		return nil, fmt.Errorf("split diff: %d file headers for %d files", len(texts), len(files))
	}
	out := make([]FilePatch, len(files))
	for i, f := range files {
		out[i] = FilePatch{OldPath: f.oldPath, NewPath: f.newPath, Text: texts[i]}
	}
	return out, nil
}
