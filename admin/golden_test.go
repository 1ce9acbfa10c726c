package admin

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPagesGolden compares the runs page and the run page of the scripted
// run with testdata/*.golden (go test ./admin -run Golden -update rewrites
// them).
func TestPagesGolden(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t, testToken)
	tests := []struct{ name, path string }{
		{"runs", "/admin/runs"},
		{"run", "/admin/runs/" + testRunID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, body := fetch(t, "GET", ts.URL+tt.path, bearer(testToken), nil)
			if code != http.StatusOK {
				t.Fatalf("GET %s = %d, want 200", tt.path, code)
			}
			golden := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), body); diff != "" {
				t.Errorf("GET %s differs from %s (-want +got):\n%s", tt.path, golden, diff)
			}
		})
	}
}
