package admin

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/runs"
)

// The files of a local run directory as bot fix writes them (package
// localfix, which a test checks these against).
const (
	localTrajectoryFile = "trajectory.jsonl"
	localPatchFile      = "patch.diff"
)

// localView serves the run page of a local run directory.
type localView struct {
	dir   string
	pages *pages
	log   *slog.Logger
	now   func() time.Time
}

// NewLocalView returns the handler of `bot view DIR`: at "/", the run page
// of the local run directory dir (the output directory of bot fix, with
// trajectory.jsonl and patch.diff), the page /admin/runs/{run_id} shows
// for a run of the bot. It reads the files at every request, so a run still
// going shows its progress (and its page reloads until it ends). It has no
// authentication: serve it on a loopback address. It answers only requests
// from a loopback address naming a loopback host (127.0.0.1, [::1] or
// localhost), so no web page can reach it through DNS rebinding. It fails
// when dir holds no readable trajectory; an empty one (a run just
// starting) is fine.
func NewLocalView(dir string, log *slog.Logger) (http.Handler, error) {
	if log == nil {
		return nil, errors.New("admin: local view: a logger is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("local run directory %s: %w", dir, err)
	}
	if _, _, err := readLocalRun(abs); err != nil {
		return nil, err
	}
	p, err := newPages()
	if err != nil {
		return nil, err
	}
	return &localView{dir: abs, pages: p, log: log, now: time.Now}, nil
}

// readLocalRun reads the trajectory (nil while it is empty) and the patch
// ("" when there is none yet) of the run directory dir.
func readLocalRun(dir string) (*agent.Trajectory, string, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, "", fmt.Errorf("%s is not a directory: give the output directory of bot fix (it holds %s)", dir, localTrajectoryFile)
	}
	path := filepath.Join(dir, localTrajectoryFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("%s holds no %s: give the output directory of bot fix", dir, localTrajectoryFile)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", path, err)
	}
	var t *agent.Trajectory
	if len(bytes.TrimSpace(b)) > 0 {
		tr, err := agent.ReadTrajectory(bytes.NewReader(b))
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", path, err)
		}
		t = &tr
	}
	patch, err := os.ReadFile(filepath.Join(dir, localPatchFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("read %s: %w", filepath.Join(dir, localPatchFile), err)
	}
	return t, string(patch), nil
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
	t, patch, err := readLocalRun(v.dir)
	if err != nil {
		v.log.Error("bot view: read the run", logattr.File, v.dir, logattr.Err, err)
		v.message(w, r, http.StatusInternalServerError, "Run unreadable", "The run could not be read: "+err.Error())
		return
	}
	rv := buildLocalView(v.dir, t, patch, v.now())
	v.pages.write(w, r, http.StatusOK, "run", runPageData(rv, ""), v.log)
}

func (v *localView) message(w http.ResponseWriter, r *http.Request, code int, heading, text string) {
	v.pages.write(w, r, code, "message", page{Title: heading, Data: messageView{heading, text}}, v.log)
}

// buildLocalView returns the page of a local run: its metadata comes from
// the trajectory (the header, the result, or while it runs the last step's
// totals), its status is the agent's exit status.
func buildLocalView(dir string, t *agent.Trajectory, patch string, now time.Time) runView {
	m := runs.Meta{RunID: filepath.Base(dir), Kind: "fix", Status: runs.StatusRunning}
	terr := ""
	if t == nil {
		terr = "The trajectory is empty: the run is starting."
	} else {
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
	v := newRunView(m, t, terr, patch, now)
	v.LocalDir = dir
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
