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
// tasks with testdata/*.golden.
func TestPagesGolden(t *testing.T) {
	f := newFixture(t)
	enqueueJobs(t, f)
	ts := f.serve(t, testToken)
	tests := []struct{ name, path string }{
		{"runs", "/admin/runs"},
		{"runs-filtered", "/admin/runs?repo=OCTO/Hello&status=failed"},
		{"runs-no-match", "/admin/runs?repo=octo/none"},
		{"run", "/admin/runs/" + testRunID},
		{"run-running", "/admin/runs/" + runningRunID},
		{"run-failed", "/admin/runs/" + failedRunID},
		{"tasks", "/admin/tasks"},
		{"tasks-delivery", "/admin/tasks?delivery=" + runningDelivery},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, body := fetch(t, "GET", ts.URL+tt.path, bearer(testToken), nil)
			if code != http.StatusOK {
				t.Fatalf("GET %s = %d, want 200", tt.path, code)
			}
			checkGolden(t, tt.name, body)
		})
	}
	t.Run("signed", func(t *testing.T) {
		path := signedPath(t, runs.LinkKey(testSecret), f.clock().Add(time.Hour))
		code, _, body := fetch(t, "GET", ts.URL+path, nil, nil)
		if code != http.StatusOK {
			t.Fatalf("GET %s = %d, want 200", path, code)
		}
		checkGolden(t, "run-signed", body)
	})
}

// TestQueueNavGolden compares the navigation bar the queue monitor's page
// gets with testdata/queuenav.golden.
func TestQueueNavGolden(t *testing.T) {
	p, err := newPages()
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "queuenav", string(p.queueNav))
}

// TestLocalViewGolden compares the pages of local run directories with
// testdata/local*.golden: the scripted run as bot fix leaves it, the same
// run's directory on the worker (with its run record), and a run of bot
// fix just starting.
func TestLocalViewGolden(t *testing.T) {
	f := newFixture(t)
	starting := t.TempDir()
	writeFile(t, filepath.Join(starting, runs.TrajectoryFile), "")
	tests := []struct{ name, dir string }{
		{"local", localRunDir(t, f)},
		{"local-record", filepath.Join(f.runsDir, testRunID)},
		{"local-record-running", filepath.Join(f.runsDir, runningRunID)},
		{"local-starting", starting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewLocalView(tt.dir, discardLogger())
			if err != nil {
				t.Fatal(err)
			}
			h.(*localView).now = f.clock
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, localRequest("GET", "/"))
			if rec.Code != http.StatusOK {
				t.Fatalf("GET / = %d, want 200:\n%s", rec.Code, rec.Body)
			}
			checkGolden(t, tt.name, strings.ReplaceAll(rec.Body.String(), tt.dir, "DIR"))
		})
	}
}
