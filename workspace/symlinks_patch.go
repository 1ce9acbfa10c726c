package workspace

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// PatchSymlinks returns the symbolic links a unified git diff (as
// WorkTree.Diff writes it) adds or modifies that sit at or under .github/
// or whose target leaves the repository, sorted by path: the problems
// Changes.Symlinks reports, for a caller that has only the patch (`bot fix
// --apply`). It reads the patch and nothing else.
//
// base answers for the tree the patch applies to: whether a path is a
// symbolic link there, and its target. PatchSymlinks asks it about the
// source of a rename or copy whose mode the patch does not show (git
// prints no mode for an exact rename) and about the path components a
// target passes through; nil means a tree without links, so an exact
// rename of a link goes unseen.
func PatchSymlinks(patch string, base func(path string) (target string, isLink bool)) ([]Symlink, error) {
	files, err := parsePatchFiles(patch)
	if err != nil {
		return nil, err
	}
	if base == nil {
		base = func(string) (string, bool) { return "", false }
	}
	after := map[string]string{} // links the patch leaves
	gone := map[string]bool{}    // paths the patch removes or turns into files
	var changed []string
	for _, f := range files {
		if f.renamed {
			gone[f.from] = true
		}
		if f.deleted {
			gone[f.to] = true
			continue
		}
		mode, target, hasTarget := f.newMode, f.target, f.hasTarget
		if mode == "" && (f.renamed || f.copied) {
			if t, ok := base(f.from); ok {
				mode = symlinkMode
				if !hasTarget {
					target, hasTarget = t, true
				}
			}
		}
		if mode != symlinkMode {
			gone[f.to] = true
			continue
		}
		if !hasTarget {
			// A link whose new target the patch carries only in binary
			// form: unreadable, so it counts as escaping.
			target = "/"
		}
		delete(gone, f.to)
		after[f.to] = target
		changed = append(changed, f.to)
	}
	lookup := func(p string) (string, bool) {
		if t, ok := after[p]; ok {
			return t, true
		}
		if gone[p] {
			return "", false
		}
		return base(p)
	}
	var out []Symlink
	slices.Sort(changed)
	for _, p := range slices.Compact(changed) {
		if s, bad := classifySymlink(p, after[p], lookup); bad {
			out = append(out, s)
		}
	}
	return out, nil
}

// patchFile is what PatchSymlinks needs of one file of a patch.
type patchFile struct {
	from, to                 string
	newMode                  string // "" when the patch shows none
	deleted, renamed, copied bool
	target                   string // the new content, for a text hunk
	hasTarget                bool
}

// parsePatchFiles splits a git diff into its files and reads their
// headers and, for small text hunks, the new content.
func parsePatchFiles(patch string) ([]patchFile, error) {
	var files []patchFile
	var cur *patchFile
	var plus []string
	inHunk := false
	flush := func() {
		if cur != nil {
			if len(plus) > 0 {
				cur.target, cur.hasTarget = strings.Join(plus, "\n"), true
			}
			files = append(files, *cur)
		}
		cur, plus, inHunk = nil, nil, false
	}
	lines := strings.Split(patch, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(line, "diff --git ") {
			flush()
			from, to, err := diffGitPaths(strings.TrimPrefix(line, "diff --git "))
			if err != nil {
				return nil, fmt.Errorf("patch line %d: %w", i+1, err)
			}
			cur = &patchFile{from: from, to: to}
			continue
		}
		if cur == nil {
			continue
		}
		if inHunk {
			switch {
			case strings.HasPrefix(line, "+"):
				plus = append(plus, line[1:])
			case strings.HasPrefix(line, `\ `):
				// "\ No newline at end of file": the lines join without one.
			case strings.HasPrefix(line, "@@"):
			case strings.HasPrefix(line, "-"), strings.HasPrefix(line, " "):
			default:
				inHunk = false
			}
			if inHunk {
				continue
			}
		}
		switch {
		case strings.HasPrefix(line, "@@"):
			inHunk = true
			if len(plus) > 0 {
				// A file of more than one hunk is no symbolic link.
				plus = append(plus, "")
			}
		case strings.HasPrefix(line, "new file mode "):
			cur.newMode = strings.TrimPrefix(line, "new file mode ")
		case strings.HasPrefix(line, "new mode "):
			cur.newMode = strings.TrimPrefix(line, "new mode ")
		case strings.HasPrefix(line, "deleted file mode "):
			cur.deleted = true
		case strings.HasPrefix(line, "index "):
			if f := strings.Fields(line); len(f) == 3 && cur.newMode == "" {
				cur.newMode = f[2]
			}
		case strings.HasPrefix(line, "rename from "), strings.HasPrefix(line, "copy from "):
			p, err := unquotePatchPath(line[strings.Index(line, "from ")+5:])
			if err != nil {
				return nil, fmt.Errorf("patch line %d: %w", i+1, err)
			}
			cur.from = p
			cur.renamed = strings.HasPrefix(line, "rename")
			cur.copied = !cur.renamed
		case strings.HasPrefix(line, "rename to "), strings.HasPrefix(line, "copy to "):
			p, err := unquotePatchPath(line[strings.Index(line, "to ")+3:])
			if err != nil {
				return nil, fmt.Errorf("patch line %d: %w", i+1, err)
			}
			cur.to = p
		case strings.HasPrefix(line, "+++ "):
			if p := strings.TrimPrefix(line, "+++ "); p != "/dev/null" {
				if q, err := unquotePatchPath(p); err == nil && strings.HasPrefix(q, "b/") {
					cur.to = q[2:]
				}
			}
		}
	}
	flush()
	return files, nil
}

// diffGitPaths reads the a/ and b/ paths of a "diff --git" line; for
// unquoted paths with spaces it relies on both being the same file (git
// writes rename and copy paths on their own lines, which win).
func diffGitPaths(s string) (from, to string, err error) {
	if strings.HasPrefix(s, `"`) {
		a, rest, err := splitQuoted(s)
		if err != nil {
			return "", "", err
		}
		b, err := unquotePatchPath(strings.TrimSpace(rest))
		if err != nil {
			return "", "", err
		}
		return strings.TrimPrefix(a, "a/"), strings.TrimPrefix(b, "b/"), nil
	}
	if i := strings.Index(s, ` "b/`); i >= 0 {
		b, err := unquotePatchPath(s[i+1:])
		if err != nil {
			return "", "", err
		}
		return strings.TrimPrefix(s[:i], "a/"), strings.TrimPrefix(b, "b/"), nil
	}
	if n := len(s); n%2 == 1 && strings.HasPrefix(s, "a/") && s[n/2] == ' ' && s[n/2+1:n/2+3] == "b/" {
		return s[2 : n/2], s[n/2+3:], nil
	}
	if i := strings.Index(s, " b/"); i >= 0 {
		return strings.TrimPrefix(s[:i], "a/"), s[i+3:], nil
	}
	return "", "", fmt.Errorf("unreadable diff --git line %q", s)
}

// splitQuoted reads one C-quoted string at the start of s.
func splitQuoted(s string) (string, string, error) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			q, err := strconv.Unquote(s[:i+1])
			return q, s[i+1:], err
		}
	}
	return "", "", fmt.Errorf("unterminated quoted path %q", s)
}

// unquotePatchPath undoes git's quoting of unusual paths ("a/tab\there").
func unquotePatchPath(s string) (string, error) {
	if !strings.HasPrefix(s, `"`) {
		return s, nil
	}
	q, err := strconv.Unquote(s)
	if err != nil {
		return "", fmt.Errorf("quoted path %s: %w", s, err)
	}
	return q, nil
}
