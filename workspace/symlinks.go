package workspace

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Symlink is a symbolic link a change adds or modifies that must not be
// pushed or applied as is: one at or under .github/ (GitHub reads
// workflows, actions and CODEOWNERS there, and a link there hides what the
// workflow check sees), or one whose target leaves the repository.
type Symlink struct {
	// Path is the link's slash-separated path, relative to the root.
	Path string
	// Target is the link's target as stored.
	Target string
	// UnderGitHub is set when Path is .github or under it.
	UnderGitHub bool
	// Escapes is set when Target is absolute, or when following it (and
	// the links it passes through) climbs above the repository's root.
	Escapes bool
}

// underGitHub reports whether the slash-separated p is .github or under it.
func underGitHub(p string) bool {
	return p == ".github" || strings.HasPrefix(p, ".github/")
}

// classifySymlink returns the Symlink for link → target, and whether it is
// one to report. links looks up the other symbolic links of the tree the
// link lives in (path → target).
func classifySymlink(link, target string, links func(p string) (string, bool)) (Symlink, bool) {
	s := Symlink{Path: link, Target: target, UnderGitHub: underGitHub(link), Escapes: escapes(link, target, links)}
	return s, s.UnderGitHub || s.Escapes
}

// maxLinkHops is how many links a resolution follows, as the kernel's
// MAXSYMLINKS; a longer chain counts as escaping.
const maxLinkHops = 40

// escapes reports whether target, read as the target of the link at the
// slash-separated path link, is absolute or climbs above the root. It
// resolves component by component, following the links that links knows,
// so `a -> .` at the root makes `sub/b -> ../a/..` escape.
func escapes(link, target string, links func(p string) (string, bool)) bool {
	if strings.HasPrefix(target, "/") {
		return true
	}
	var cur []string
	if dir := path.Dir(link); dir != "." {
		cur = strings.Split(dir, "/")
	}
	pending := strings.Split(target, "/")
	hops := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return true
			}
			cur = cur[:len(cur)-1]
			continue
		}
		next := strings.Join(append(slices.Clone(cur), c), "/")
		if t, ok := links(next); ok {
			if hops++; hops > maxLinkHops || strings.HasPrefix(t, "/") {
				return true
			}
			pending = append(strings.Split(t, "/"), pending...)
			continue
		}
		cur = append(cur, c)
	}
	return false
}

// symlinkMode is git's file mode of a symbolic link.
const symlinkMode = "120000"

// rawEntry is one entry of `git diff --raw -z --no-renames`.
type rawEntry struct {
	newMode, newBlob, status, path string
}

// parseRaw reads `git diff --raw -z --no-renames --no-abbrev`.
func parseRaw(out string) ([]rawEntry, error) {
	var entries []rawEntry
	fields := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
	if out == "" {
		fields = nil
	}
	if len(fields)%2 != 0 {
		return nil, fmt.Errorf("unexpected raw diff output %q", out)
	}
	for i := 0; i < len(fields); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) != 5 {
			return nil, fmt.Errorf("unexpected raw diff entry %q", fields[i])
		}
		entries = append(entries, rawEntry{newMode: meta[1], newBlob: meta[3], status: meta[4], path: fields[i+1]})
	}
	return entries, nil
}

// indexSymlinks returns every symbolic link in the private index (what a
// commit records), path → target.
func (w *WorkTree) indexSymlinks(ctx context.Context) (map[string]string, error) {
	out, err := w.git.run(ctx, nil, 256<<20, nil, "ls-files", "--stage", "-z")
	if err != nil {
		return nil, err
	}
	var paths, blobs []string
	for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		meta, p, ok := strings.Cut(rec, "\t")
		if f := strings.Fields(meta); ok && len(f) == 3 && f[0] == symlinkMode {
			paths, blobs = append(paths, p), append(blobs, f[1])
		}
	}
	targets, err := w.blobs(ctx, blobs)
	if err != nil {
		return nil, err
	}
	links := make(map[string]string, len(paths))
	for i, p := range paths {
		links[p] = targets[i]
	}
	return links, nil
}

// blobs returns the contents of the blobs ids (symlink targets: small),
// in order.
func (w *WorkTree) blobs(ctx context.Context, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out, err := w.git.run(ctx, []byte(strings.Join(ids, "\n")+"\n"), 64<<20, nil, "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	r := bufio.NewReader(bytes.NewReader(out))
	var contents []string
	for range ids {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("cat-file: %w", err)
		}
		f := strings.Fields(header)
		if len(f) != 3 {
			return nil, fmt.Errorf("cat-file: unexpected header %q", header)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("cat-file: unexpected header %q", header)
		}
		body := make([]byte, n+1) // and the newline after it
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, fmt.Errorf("cat-file: %w", err)
		}
		contents = append(contents, string(body[:n]))
	}
	return contents, nil
}
