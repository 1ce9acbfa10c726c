package admin

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfix/agentfix/localfix"
	"github.com/agentfix/agentfix/runs"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// localRequest is a request to bot view from this machine.
func localRequest(method, path string) *http.Request {
	r := httptest.NewRequest(method, "http://127.0.0.1:8123"+path, nil)
	r.RemoteAddr = "127.0.0.1:50000"
	return r
}

// localRunDir returns a run directory as bot fix leaves it, holding the
// scripted run's trajectory and patch.
func localRunDir(t *testing.T, f *fixture) string {
	t.Helper()
	rec, err := f.store.Get(context.Background(), testRunID)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), testRunID)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, localfix.TrajectoryFile), string(rec.Trajectory))
	writeFile(t, filepath.Join(dir, localfix.PatchFile), rec.Patch)
	return dir
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLocalFileNames checks the view reads the files bot fix writes: those
// of a run directory of package runs.
func TestLocalFileNames(t *testing.T) {
	if runs.TrajectoryFile != localfix.TrajectoryFile || runs.PatchFile != localfix.PatchFile {
		t.Errorf("the local view reads %s and %s, bot fix writes %s and %s", runs.TrajectoryFile, runs.PatchFile, localfix.TrajectoryFile, localfix.PatchFile)
	}
}

// TestLocalViewRunning follows a run directory while bot fix writes it:
// empty, then some steps (the page reloads and shows the totals so far),
// then the result (the reload stops, the status is the agent's).
func TestLocalViewRunning(t *testing.T) {
	f := newFixture(t)
	done := localRunDir(t, f)
	traj, err := os.ReadFile(filepath.Join(done, localfix.TrajectoryFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(traj), "\n")
	dir := t.TempDir()
	path := filepath.Join(dir, localfix.TrajectoryFile)
	writeFile(t, path, "")
	h, err := NewLocalView(dir, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	// The agent started 1.5 s after t0 (the fixture's clock).
	h.(*localView).now = func() time.Time { return t0.Add(2*time.Minute + 1500*time.Millisecond) }
	get := func() string {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, localRequest("GET", "/"))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET / = %d, want 200:\n%s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	const reload = `<meta http-equiv="refresh" content="5">`
	tests := []struct {
		name string
		// lines of the trajectory written so far; a cut-off last line
		// when cut is set.
		lines int
		cut   bool
		want  []string
		not   []string
	}{
		{"empty", 0, false, []string{reload, noStepsLocal, ">Running<"}, nil},
		{"two steps, the third being written", 3, true,
			[]string{reload, ">Running<", "2 min", "(so far)", `id="step-2"`, "$0.0093", "no result yet"},
			[]string{`id="step-3"`, "cut off"}},
		{"ended", len(lines), false,
			[]string{`title="submitted">Submitted<`, "setup not included", "-\tfmt.Println(&#34;Helo&#34;)"},
			[]string{reload, "no result yet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := strings.Join(lines[:tt.lines], "")
			if tt.cut {
				body += lines[tt.lines][:20]
			}
			writeFile(t, path, body)
			if tt.lines == len(lines) {
				patch, err := os.ReadFile(filepath.Join(done, localfix.PatchFile))
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(dir, localfix.PatchFile), string(patch))
			}
			page := get()
			for _, w := range tt.want {
				if !strings.Contains(page, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(page, n) {
					t.Errorf("the page has %q", n)
				}
			}
		})
	}
}

// TestLocalViewRefuses checks bot view's errors at start and the requests
// it refuses.
func TestLocalViewRefuses(t *testing.T) {
	t.Run("start", func(t *testing.T) {
		root := t.TempDir()
		mkdir := func(parts ...string) string {
			t.Helper()
			dir := filepath.Join(append([]string{root}, parts...)...)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			return dir
		}
		header := `{"type":"header","v":1,"run_id":"r"}` + "\n"
		writeFile(t, filepath.Join(mkdir("file"), "x"), "x")
		writeFile(t, filepath.Join(mkdir("one", "agentfix-runs", "20250102T150405Z-1a2b3c4d"), runs.TrajectoryFile), header)
		for _, id := range []string{"20250102T150405Z-1a2b3c4d", "20250103T080000Z-0e0e0e0e"} {
			writeFile(t, filepath.Join(mkdir("two", "agentfix-runs", id), runs.TrajectoryFile), header)
		}
		writeFile(t, filepath.Join(mkdir("bad-trajectory"), runs.TrajectoryFile), `{"type":"step","step":1}`+"\n")
		writeFile(t, filepath.Join(mkdir("bad-record"), runs.MetaFile), `{"run_id": 7}`)
		writeFile(t, filepath.Join(mkdir("bad-record"), runs.TrajectoryFile), header)
		writeFile(t, filepath.Join(mkdir("cut-record"), runs.MetaFile), `{"run_id": "20250102T150405Z-1a2b3c4d", `)
		writeFile(t, filepath.Join(mkdir("list-record"), runs.MetaFile), `[]`)
		mkdir("empty")
		tests := []struct{ name, dir string }{
			{"missing directory", filepath.Join(root, "nope")},
			{"a file", filepath.Join(root, "file", "x")},
			{"the trajectory file", filepath.Join(root, "one", "agentfix-runs", "20250102T150405Z-1a2b3c4d", runs.TrajectoryFile)},
			{"no trajectory", filepath.Join(root, "empty")},
			{"the parent of a run directory", filepath.Join(root, "one", "agentfix-runs")},
			{"the parent of run directories", filepath.Join(root, "two", "agentfix-runs")},
			{"not a trajectory", filepath.Join(root, "bad-trajectory")},
			{"not a run record", filepath.Join(root, "bad-record")},
			{"a cut-off run record", filepath.Join(root, "cut-record")},
			{"a run record that is a list", filepath.Join(root, "list-record")},
		}
		var got strings.Builder
		for _, tt := range tests {
			_, err := NewLocalView(tt.dir, discardLogger())
			if err == nil {
				t.Errorf("NewLocalView(%s) succeeded, want an error", tt.name)
				continue
			}
			fmt.Fprintf(&got, "%s:\n%s\n\n", tt.name, strings.ReplaceAll(err.Error(), root, "ROOT"))
		}
		checkGolden(t, "local-errors", got.String())
	})
	f := newFixture(t)
	h, err := NewLocalView(localRunDir(t, f), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  func() *http.Request
		want int
	}{
		{"the page", func() *http.Request { return localRequest("GET", "/") }, http.StatusOK},
		{"localhost", func() *http.Request { r := localRequest("GET", "/"); r.Host = "localhost:8123"; return r }, http.StatusOK},
		{"IPv6 loopback", func() *http.Request {
			r := localRequest("GET", "/")
			r.Host, r.RemoteAddr = "[::1]:8123", "[::1]:50000"
			return r
		}, http.StatusOK},
		{"another path", func() *http.Request { return localRequest("GET", "/admin/runs") }, http.StatusNotFound},
		{"a post", func() *http.Request { return localRequest("POST", "/") }, http.StatusMethodNotAllowed},
		{"another host (DNS rebinding)", func() *http.Request { r := localRequest("GET", "/"); r.Host = "evil.example:8123"; return r }, http.StatusForbidden},
		{"from another machine", func() *http.Request { r := localRequest("GET", "/"); r.RemoteAddr = "192.0.2.7:50000"; return r }, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, tt.req())
			if rec.Code != tt.want {
				t.Errorf("%s = %d, want %d:\n%s", tt.name, rec.Code, tt.want, rec.Body)
			}
			if tt.want == http.StatusForbidden && strings.Contains(rec.Body.String(), "greet.go") {
				t.Errorf("%s shows the run", tt.name)
			}
		})
	}
}
