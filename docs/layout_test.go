package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// architectureDoc holds the "where things are" table.
const architectureDoc = "docs/architecture.md"

// goDirs lists, relative to dir and with a trailing slash, the
// directories under dir that hold Go files: the packages of the module,
// without testdata and hidden directories.
func goDirs(t *testing.T, dir string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != dir && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			rel, err := filepath.Rel(dir, filepath.Dir(path))
			if err != nil {
				return err
			}
			if rel != "." {
				seen[filepath.ToSlash(rel)+"/"] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	out := make([]string, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

func TestWhereThingsAreNamesEveryPackage(t *testing.T) {
	t.Parallel()
	md := readDoc(t, architectureDoc)
	rows := rowNames(section(t, architectureDoc, md, "Where things are"))
	pkgs := goDirs(t, root)
	if !slices.Contains(pkgs, "jobs/worker/") || !slices.Contains(pkgs, "docs/") {
		t.Fatalf("goDirs found %v; want jobs/worker/ and docs/ among them", pkgs)
	}
	for _, p := range pkgs {
		if !slices.Contains(rows, p) {
			t.Errorf("the package %s has no row in the \"Where things are\" table of %s", p, architectureDoc)
		}
	}
	for _, r := range rows {
		if !strings.HasSuffix(r, "/") {
			t.Errorf("%s: the row %q must name a directory ending in /", architectureDoc, r)
			continue
		}
		fi, err := os.Stat(filepath.Join(root, r))
		if err != nil || !fi.IsDir() {
			t.Errorf("%s names %s, which is not a directory of the repository", architectureDoc, r)
		}
	}
}

func TestGoDirs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, f := range []string{"a/a.go", "a/b/b_test.go", "a/testdata/x.go", ".hidden/h.go", "c/README.md", "top.go"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := goDirs(t, dir)
	want := []string{"a/", "a/b/"}
	if !slices.Equal(got, want) {
		t.Errorf("goDirs = %v, want %v", got, want)
	}
}
