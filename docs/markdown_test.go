package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository root, seen from this package's directory.
const root = ".."

// readDoc returns the text of the file at path, relative to the root.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}

// section returns the lines of md under the "## " heading that starts with
// title, up to the next "## " heading.
func section(t *testing.T, file, md, title string) []string {
	t.Helper()
	var out []string
	in, found := false, false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line[3:], title)
			found = found || in
			continue
		}
		if in {
			out = append(out, line)
		}
	}
	if !found {
		t.Fatalf("%s has no section %q", file, "## "+title)
	}
	return out
}

// firstCell matches a table row whose first cell is one name in backticks.
var firstCell = regexp.MustCompile("^\\| `([^`]+)` \\|")

// rowNames returns the names in the first cells of the table rows among
// lines, in order.
func rowNames(lines []string) []string {
	var out []string
	for _, l := range lines {
		if m := firstCell.FindStringSubmatch(l); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// slug is the anchor GitHub gives a heading: lower case, letters, digits,
// spaces, hyphens and underscores kept, spaces made hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of the headings of md, numbered as GitHub
// numbers repeated ones.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		s := slug(h)
		if n := seen[s]; n > 0 {
			out[s+"-"+string(rune('0'+n))] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func TestSlug(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"Repository settings: `.github/agent-fix.yml`", "repository-settings-githubagent-fixyml"},
		{"Try it locally: `bot fix`", "try-it-locally-bot-fix"},
		{"Where a job's environment comes from", "where-a-jobs-environment-comes-from"},
		{"Per-job limits", "per-job-limits"},
	} {
		if got := slug(c.in); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
