package admin

import (
	"net/http"
	"strconv"
	"time"

	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/runs"
)

const (
	// defaultListLimit is how many runs /admin/runs shows; ?limit= asks
	// for up to maxListLimit.
	defaultListLimit = 100
	maxListLimit     = 1000
)

// runsView is the data of the runs page.
type runsView struct {
	Runs      []runRow
	Limit     int
	Retention time.Duration
}

// runRow is one run in the list.
type runRow struct {
	runs.Meta
	// Target is "issue #N" or "PR #N", TargetURL its link on GitHub.
	Target, TargetURL string
	Duration          time.Duration
}

func (s *Server) runList(w http.ResponseWriter, r *http.Request) {
	limit := defaultListLimit
	if q := r.URL.Query().Get("limit"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 || n > maxListLimit {
			s.message(w, r, http.StatusBadRequest, "Bad limit", "limit must be a whole number from 1 to "+strconv.Itoa(maxListLimit)+", got "+strconv.Quote(q)+".")
			return
		}
		limit = n
	}
	metas, err := s.runs.List(r.Context(), limit)
	if err != nil {
		s.log.Error("list runs", logattr.Path, r.URL.Path, logattr.Err, err)
		s.message(w, r, http.StatusServiceUnavailable, "Runs unavailable", "The run records could not be read from Redis; try again shortly.")
		return
	}
	now := s.now()
	v := runsView{Limit: limit, Retention: s.runs.Retention()}
	for _, m := range metas {
		v.Runs = append(v.Runs, runRow{Meta: m, Target: target(m), TargetURL: targetURL(s.webURL, m), Duration: runDuration(m, now)})
	}
	s.render(w, r, http.StatusOK, "runs", v)
}

// target names what the run worked on.
func target(m runs.Meta) string {
	if m.Number <= 0 {
		return "–"
	}
	if onPR(m.Kind) {
		return "PR #" + itoa(m.Number)
	}
	return "issue #" + itoa(m.Number)
}

// onPR reports whether a run of kind works on a pull request: a revise
// round, or an automatic ci or conflict round.
func onPR(kind string) bool { return kind == "revise" || kind == "ci" || kind == "conflict" }
