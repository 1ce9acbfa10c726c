package admin

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// constValues returns the values of the string constants of type typ
// declared in the Go file path.
func constValues(t *testing.T, path, typ string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typ {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: a %s constant is not a string literal", path, typ)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s declares no %s constants", path, typ)
	}
	return out
}

// TestEveryStatusHasWords checks that every outcome the worker can record
// as a run's status (read from its source, so a new one fails here until
// it gets words) and every agent exit status has a label for people.
func TestEveryStatusHasWords(t *testing.T) {
	tests := []struct {
		name, path, typ string
		table           []describedStatus
		extra           []string
	}{
		{"outcomes", "../jobs/worker/outcome/outcome.go", "Outcome", runStatuses, []string{"running"}},
		{"exit statuses", "../agent/types.go", "ExitStatus", exitStatuses, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values := append(constValues(t, tt.path, tt.typ), tt.extra...)
			labels := map[string]string{}
			for _, v := range values {
				d := describe(tt.table, v)
				if d.Label == v || d.Label == "" {
					t.Errorf("status %q has no words for people", v)
				}
				if other, ok := labels[d.Label]; ok {
					t.Errorf("statuses %q and %q share the label %q", other, v, d.Label)
				}
				labels[d.Label] = v
			}
		})
	}
}

func TestDescribeStatus(t *testing.T) {
	tests := []struct {
		status string
		want   statusView
	}{
		{"pr_opened", statusView{"Pull request opened", "ok", "pr_opened"}},
		{"running", statusView{"Running", "running", "running"}},
		{"setup_failed", statusView{"Setup failed", "bad", "setup_failed"}},
		{"no_changes", statusView{"No changes", "neutral", "no_changes"}},
		{"some_new_outcome", statusView{"some_new_outcome", "neutral", "some_new_outcome"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, describeStatus(tt.status)); diff != "" {
			t.Errorf("describeStatus(%q) (-want +got):\n%s", tt.status, diff)
		}
	}
	if got := describeExit(""); got.Label != "–" {
		t.Errorf("describeExit(\"\") = %+v, want a dash", got)
	}
	if got := describeExit("autosubmitted"); got.Label != "Submitted automatically at a limit" || got.Tone != "ok" {
		t.Errorf("describeExit(autosubmitted) = %+v", got)
	}
}
