package admin

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/runs"
)

// checkGolden compares got with testdata/name.golden (go test ./admin -run
// Golden -update rewrites them).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("the page differs from %s (-want +got):\n%s", golden, diff)
	}
}

// TestPagesGolden compares the admin pages of the fixture's runs and
// tasks, the signed run page and the pages that only say something (the
// login form, refusals, errors) with testdata/*.golden.
func TestPagesGolden(t *testing.T) {
	f := newFixture(t)
	enqueueJobs(t, f)
	ts := f.serve(t, testToken)
	key := runs.LinkKey(testSecret)
	signed := signedPath(t, key, f.clock().Add(time.Hour))
	auth := bearer(testToken)
	tests := []struct {
		name, path string
		header     http.Header
		code       int
	}{
		{"runs", "/admin/runs", auth, http.StatusOK},
		{"runs-filtered", "/admin/runs?repo=OCTO/Hello&status=failed", auth, http.StatusOK},
		{"runs-no-match", "/admin/runs?repo=octo/none", auth, http.StatusOK},
		{"run", "/admin/runs/" + testRunID, auth, http.StatusOK},
		{"run-running", "/admin/runs/" + runningRunID, auth, http.StatusOK},
		{"run-failed", "/admin/runs/" + failedRunID, auth, http.StatusOK},
		{"tasks", "/admin/tasks", auth, http.StatusOK},
		{"tasks-delivery", "/admin/tasks?delivery=" + runningDelivery, auth, http.StatusOK},
		{"run-signed", signed, nil, http.StatusOK},
		{"login", "/admin/login", nil, http.StatusOK},
		{"unauthorized", "/admin/runs", nil, http.StatusUnauthorized},
		{"run-not-found", "/admin/runs/20241201T000000Z-00000000", auth, http.StatusNotFound},
		{"runs-bad-limit", "/admin/runs?limit=all", auth, http.StatusBadRequest},
		{"admin-not-found", "/admin/settings", auth, http.StatusNotFound},
		{"link-invalid", strings.Replace(signed, "sig=", "sig=x", 1), nil, http.StatusForbidden},
		{"link-expired", signedPath(t, key, f.clock().Add(-time.Second)), nil, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, body := fetch(t, "GET", ts.URL+tt.path, tt.header, nil)
			if code != tt.code {
				t.Fatalf("GET %s = %d, want %d", tt.path, code, tt.code)
			}
			checkGolden(t, tt.name, body)
		})
	}
}

// TestLocalViewGolden compares the pages of local run directories with
// testdata/local*.golden: the scripted run as bot fix leaves it, the same
// run's directory on the worker (with its run record), a run of bot fix
// just starting, a path bot view does not serve and a directory that has
// become unreadable.
func TestLocalViewGolden(t *testing.T) {
	f := newFixture(t)
	starting := t.TempDir()
	writeFile(t, filepath.Join(starting, runs.TrajectoryFile), "")
	gone := localRunDir(t, f)
	tests := []struct {
		name, dir, path string
		code            int
		// after changes the directory once bot view has started.
		after func()
	}{
		{"local", localRunDir(t, f), "/", http.StatusOK, nil},
		{"local-record", filepath.Join(f.runsDir, testRunID), "/", http.StatusOK, nil},
		{"local-record-running", filepath.Join(f.runsDir, runningRunID), "/", http.StatusOK, nil},
		{"local-starting", starting, "/", http.StatusOK, nil},
		{"local-not-found", starting, "/runs/x", http.StatusNotFound, nil},
		{"local-unreadable", gone, "/", http.StatusInternalServerError, func() {
			if err := os.Remove(filepath.Join(gone, runs.TrajectoryFile)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewLocalView(tt.dir, discardLogger())
			if err != nil {
				t.Fatal(err)
			}
			h.(*localView).now = f.clock
			if tt.after != nil {
				tt.after()
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, localRequest("GET", tt.path))
			if rec.Code != tt.code {
				t.Fatalf("GET %s = %d, want %d:\n%s", tt.path, rec.Code, tt.code, rec.Body)
			}
			checkGolden(t, tt.name, strings.ReplaceAll(rec.Body.String(), tt.dir, "DIR"))
		})
	}
}
