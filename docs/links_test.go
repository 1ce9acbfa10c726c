package docs

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// documents are the Markdown files these tests keep true, relative to the
// root; docs/*.md are added by pages.
var documents = []string{"README.md", "CONTRIBUTING.md", "SECURITY.md", "deploy/README.md"}

// pages returns documents and docs/*.md.
func pages(t *testing.T) []string {
	t.Helper()
	md, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := append([]string(nil), documents...)
	for _, m := range md {
		out = append(out, "docs/"+m)
	}
	return out
}

// link matches a Markdown link's target (inline form).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// inlineCode matches a code span.
var inlineCode = regexp.MustCompile("`[^`]*`")

// withoutCode removes fenced code blocks and inline code from md, where
// brackets are not links.
func withoutCode(md string) string {
	var b strings.Builder
	fence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if !fence {
			b.WriteString(inlineCode.ReplaceAllString(line, ""))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func TestRelativeLinksResolve(t *testing.T) {
	t.Parallel()
	for _, page := range pages(t) {
		md := readDoc(t, page)
		for _, m := range link.FindAllStringSubmatch(withoutCode(md), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			resolved := page
			if file != "" {
				resolved = path.Join(path.Dir(page), file)
			}
			fi, err := os.Stat(filepath.Join(root, resolved))
			if err != nil {
				t.Errorf("%s links to %s, which does not exist", page, target)
				continue
			}
			if anchor == "" {
				continue
			}
			if fi.IsDir() || !strings.HasSuffix(resolved, ".md") {
				t.Errorf("%s links to %s: an anchor in a file that is not Markdown", page, target)
				continue
			}
			if !anchors(readDoc(t, resolved))[anchor] {
				t.Errorf("%s links to %s, but %s has no heading with the anchor #%s", page, target, resolved, anchor)
			}
		}
	}
}

// TestNoDesignDoc keeps the documents from citing a DESIGN.md: the
// repository has none.
func TestNoDesignDoc(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(root, "DESIGN.md")); err == nil {
		t.Skip("the repository has a DESIGN.md now")
	}
	for _, page := range pages(t) {
		for i, line := range strings.Split(readDoc(t, page), "\n") {
			if strings.Contains(line, "DESIGN.md") {
				t.Errorf("%s:%d cites DESIGN.md, which the repository does not have", page, i+1)
			}
		}
	}
}
