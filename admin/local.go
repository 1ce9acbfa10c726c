package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/internal/httpserve"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/runs"
)

// ServeLocal serves h, a NewLocalView, on ln until ctx is cancelled, then
// shuts down, letting requests in flight finish (bot view).
func ServeLocal(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      60 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return httpserve.Until(ctx, srv, ln, nil)
}

// localView serves the run page of a local run directory.
type localView struct {
	dir   string
	pages *pages
	log   *slog.Logger
	now   func() time.Time
}

// NewLocalView returns the handler of `bot view DIR`: at "/", the run page
// of the run directory dir, the page /admin/runs/{run_id} shows for a run
// of the bot. dir is the output directory of bot fix (trajectory.jsonl and
// patch.diff) or a worker's run directory, which also holds the run record
// (meta.json). It reads the files at every request, so a run still going
// shows its progress (and its page reloads until it ends). It has no
// authentication: serve it on a loopback address. It answers only requests
// from a loopback address naming a loopback host (127.0.0.1, [::1] or
// localhost), so no web page can reach it through DNS rebinding. It fails,
// saying what to give instead, when dir is not a run directory or its files
// cannot be read; an empty trajectory (a run just starting) is fine.
func NewLocalView(dir string, log *slog.Logger) (http.Handler, error) {
	if log == nil {
		return nil, errors.New("admin: local view: a logger is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("run directory %s: %w", dir, err)
	}
	if _, err := readLocalRun(abs); err != nil {
		return nil, err
	}
	p, err := newPages()
	if err != nil {
		return nil, err
	}
	return &localView{dir: abs, pages: p, log: log, now: time.Now}, nil
}

// localRun is what a run directory holds.
type localRun struct {
	// Meta is the run record; nil without meta.json (a run of bot fix).
	Meta *runs.Meta
	// Trajectory is nil while trajectory.jsonl is empty or, with a run
	// record, missing.
	Trajectory *agent.Trajectory
	// Patch is "" when there is none (yet).
	Patch string
}

// readLocalRun reads the run directory dir. It must hold a trajectory or
// a run record.
func readLocalRun(dir string) (localRun, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return localRun{}, fmt.Errorf("%s does not exist: give the output directory of a run of bot fix (./agentfix-runs/RUN_ID, which holds %s)", dir, runs.TrajectoryFile)
	case err != nil:
		return localRun{}, fmt.Errorf("run directory: %w", err)
	case !fi.IsDir() && filepath.Base(dir) == runs.TrajectoryFile:
		return localRun{}, fmt.Errorf("%s is a file: give the directory that holds it, %s", dir, filepath.Dir(dir))
	case !fi.IsDir():
		return localRun{}, fmt.Errorf("%s is a file, not a directory: give the output directory of a run of bot fix (./agentfix-runs/RUN_ID, which holds %s)", dir, runs.TrajectoryFile)
	}
	var run localRun
	metaPath := filepath.Join(dir, runs.MetaFile)
	b, err := os.ReadFile(metaPath)
	switch {
	case err == nil:
		var m runs.Meta
		if err := json.Unmarshal(b, &m); err != nil {
			return localRun{}, fmt.Errorf("%s is not a run record: %s", metaPath, jsonProblem(err))
		}
		run.Meta = &m
	case !errors.Is(err, fs.ErrNotExist):
		return localRun{}, fmt.Errorf("read the run record: %w", err)
	}
	trajPath := filepath.Join(dir, runs.TrajectoryFile)
	b, err = os.ReadFile(trajPath)
	switch {
	case errors.Is(err, fs.ErrNotExist) && run.Meta == nil:
		return localRun{}, noTrajectoryError(dir)
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return localRun{}, fmt.Errorf("read the trajectory: %w", err)
	case len(bytes.TrimSpace(b)) > 0:
		t, err := agent.ReadTrajectory(bytes.NewReader(b))
		if err != nil {
			return localRun{}, fmt.Errorf("%s is not a valid trajectory: %w", trajPath, err)
		}
		run.Trajectory = &t
	}
	patch, err := os.ReadFile(filepath.Join(dir, runs.PatchFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return localRun{}, fmt.Errorf("read the patch: %w", err)
	}
	run.Patch = string(patch)
	return run, nil
}

// noTrajectoryError says that dir holds no trajectory and, when it holds
// run directories (it is their parent, ./agentfix-runs), names the newest.
func noTrajectoryError(dir string) error {
	entries, _ := os.ReadDir(dir) // an unreadable directory just has no suggestion
	var found []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), runs.TrajectoryFile)); err == nil {
			found = append(found, e.Name())
		}
	}
	if len(found) == 0 {
		return fmt.Errorf("%s holds no %s: give the output directory of a run of bot fix (./agentfix-runs/RUN_ID)", dir, runs.TrajectoryFile)
	}
	// Run ids sort by time.
	sort.Strings(found)
	newest := filepath.Join(dir, found[len(found)-1])
	if len(found) == 1 {
		return fmt.Errorf("%s holds no %s but a run directory: give it, %s", dir, runs.TrajectoryFile, newest)
	}
	return fmt.Errorf("%s holds no %s but %d run directories: give one of them, such as the newest, %s",
		dir, runs.TrajectoryFile, len(found), newest)
}

// jsonProblem says in words what is wrong with a JSON document.
func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("invalid JSON at byte %d (%s)", syntax.Offset, syntax)
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Sprintf("%q is a JSON %s, want a %s", typ.Field, typ.Value, jsonKind(typ.Type.Kind()))
	case errors.As(err, &typ):
		return fmt.Sprintf("the document is a JSON %s, want an object", typ.Value)
	}
	return err.Error()
}

// jsonKind names the JSON form of a Go kind.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return "number"
}

func (v *localView) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !loopbackRequest(r) {
		http.Error(w, "bot view answers only requests to 127.0.0.1, [::1] or localhost from this machine", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "bot view only shows a run", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path != "/" {
		v.message(w, r, http.StatusNotFound, "Not found", "bot view shows one run, at /.")
		return
	}
	run, err := readLocalRun(v.dir)
	if err != nil {
		v.log.Error("bot view: read the run", logattr.File, v.dir, logattr.Err, err)
		v.message(w, r, http.StatusInternalServerError, "Run unreadable", "The run could not be read: "+err.Error())
		return
	}
	v.pages.write(w, r, http.StatusOK, "run", runPageData(buildLocalView(v.dir, run, v.now()), ""), v.log)
}

func (v *localView) message(w http.ResponseWriter, r *http.Request, code int, heading, text string) {
	v.pages.write(w, r, code, "message", page{Title: heading, Data: messageView{heading, text}}, v.log)
}

// buildLocalView returns the page of a local run. With a run record it is
// the page of the record. Without one (bot fix), its metadata comes from
// the trajectory (the header, the result, or while it runs the last step's
// totals) and its status is the agent's exit status.
func buildLocalView(dir string, run localRun, now time.Time) runView {
	if run.Meta != nil {
		v := newRunView(*run.Meta, run.Trajectory, "", run.Patch, now)
		v.LocalDir = dir
		v.WallTimeNote = wallTimeJob
		if v.Running {
			v.WallTimeNote = wallTimeRunning
		}
		return v
	}
	m := runs.Meta{RunID: filepath.Base(dir), Kind: "fix", Status: runs.StatusRunning}
	if t := run.Trajectory; t != nil {
		h := t.Header
		m.RunID, m.Repo, m.Number, m.Model, m.Started = h.RunID, h.Task.Repo, h.Task.Issue, h.Model, h.Started
		if n := len(t.Steps); n > 0 {
			last := t.Steps[n-1]
			m.Steps, m.CostUSD, m.Tokens = last.Step, last.TotalCostUSD, tokensOf(last.TotalUsage)
		}
		if res := t.Result; res != nil {
			m.Status, m.ExitStatus, m.ExitReason = string(res.Status), string(res.Status), res.Reason
			m.Steps, m.CostUSD, m.Tokens = res.Steps, res.CostUSD, tokensOf(res.Usage)
			m.Ended, m.Duration = res.Ended, res.Duration
			if res.Ended.After(h.Started) {
				m.Duration = res.Ended.Sub(h.Started)
			}
		}
	}
	v := newRunView(m, run.Trajectory, "", run.Patch, now)
	v.LocalDir, v.AgentOnly = dir, true
	if v.TrajectoryNote != "" {
		v.TrajectoryNote = noStepsLocal
	}
	v.WallTimeNote = wallTimeLocal
	if v.Running {
		v.WallTimeNote = wallTimeRunning
	} else {
		v.Status = describeExit(m.Status)
	}
	return v
}

func tokensOf(u agent.Usage) runs.Tokens {
	return runs.Tokens{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadTokens, CacheWrite: u.CacheWriteTokens}
}

// loopbackRequest reports whether r came from a loopback address and names
// a loopback host.
func loopbackRequest(r *http.Request) bool {
	client, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(client); err != nil || ip == nil || !ip.IsLoopback() {
		return false
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
