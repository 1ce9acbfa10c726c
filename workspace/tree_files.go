package workspace

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Files returns the regular files of commit (in the work tree's private
// git dir, so nothing the agent wrote) whose slash-separated path match
// accepts, each cut to maxBytes; symbolic links are never followed. The
// harness reads the repository's instructions files (AGENTS.md and the
// like) this way from the default branch.
func (w *WorkTree) Files(ctx context.Context, commit string, match func(path string) bool, maxBytes int) (map[string]string, error) {
	if !commitID.MatchString(commit) {
		return nil, fmt.Errorf("files of %q: not a full commit id", commit)
	}
	out, err := w.git.run(ctx, nil, 64<<20, nil, "ls-tree", "-r", "-z", "--full-tree", commit)
	if err != nil {
		return nil, fmt.Errorf("files of %s: %w", commit, err)
	}
	files := map[string]string{}
	for _, entry := range strings.Split(string(out), "\x00") {
		meta, path, ok := strings.Cut(entry, "\t")
		f := strings.Fields(meta) // mode, type, object id
		if !ok || len(f) != 3 || f[1] != "blob" || (f[0] != "100644" && f[0] != "100755") || !match(path) {
			continue
		}
		size, err := w.git.text(ctx, "cat-file", "-s", f[2])
		if err != nil {
			return nil, fmt.Errorf("files of %s: %w", commit, err)
		}
		n, _ := strconv.Atoi(size)
		b, err := w.git.run(ctx, nil, int64(max(n, 1)), nil, "cat-file", "blob", f[2])
		if err != nil {
			return nil, fmt.Errorf("files of %s: %s: %w", commit, path, err)
		}
		if len(b) > maxBytes {
			b = b[:maxBytes]
		}
		files[path] = string(b)
	}
	return files, nil
}
