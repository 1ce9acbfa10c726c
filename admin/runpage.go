package admin

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/runs"
)

// adminRun serves /admin/runs/{run_id}.
func (s *Server) adminRun(w http.ResponseWriter, r *http.Request) {
	s.runPage(w, r, chi.URLParam(r, "run_id"), time.Time{})
}

// signedRun serves /runs/{run_id}?exp=…&sig=…: the run page for whoever
// holds a valid, unexpired signed link.
func (s *Server) signedRun(w http.ResponseWriter, r *http.Request) {
	id, q := chi.URLParam(r, "run_id"), r.URL.Query()
	err := runs.VerifyLink(s.linkKey, id, q.Get("exp"), q.Get("sig"), s.now())
	switch {
	case errors.Is(err, runs.ErrLinkExpired):
		s.message(w, r, http.StatusForbidden, "Link expired",
			"This link to a run has expired. Run links last as long as run records: "+days(s.runs.Retention())+".")
		return
	case err != nil:
		s.log.Info("refused run link", logattr.RunID, id, logattr.Reason, err.Error())
		s.message(w, r, http.StatusForbidden, "Invalid link",
			"This link to a run is not valid: it may have been altered or copied incompletely. Use the link as the pull request gives it.")
		return
	}
	exp, _ := strconv.ParseInt(q.Get("exp"), 10, 64) // verified above
	s.runPage(w, r, id, time.Unix(exp, 0))
}

// runPage renders run id; linkExpires is set for a signed link.
func (s *Server) runPage(w http.ResponseWriter, r *http.Request, id string, linkExpires time.Time) {
	rec, err := s.runs.Get(r.Context(), id)
	if errors.Is(err, runs.ErrNotFound) {
		s.message(w, r, http.StatusNotFound, "Run not found",
			"There is no run "+strconv.Quote(id)+". Run records are kept for "+days(s.runs.Retention())+
				" (AGENTFIX_RUN_RETENTION) and then expire; this one may have expired.")
		return
	}
	if err != nil {
		s.log.Error("get run", logattr.RunID, id, logattr.Err, err)
		s.message(w, r, http.StatusServiceUnavailable, "Run unavailable", "The run record could not be read; try again shortly.")
		return
	}
	v := buildRunView(rec, s.webURL, s.now())
	v.LinkExpires = linkExpires
	v.AdminLinks = s.showNav(r)
	s.renderPage(w, r, http.StatusOK, "run", runPageData(v, "runs"))
}

// runPageData is the layout's data for a run page: it reloads while the
// run runs.
func runPageData(v runView, nav string) page {
	if v.Running {
		v.Reload = runRefresh
	}
	return page{Title: "Run " + v.Meta.RunID, Nav: nav, Refresh: v.Reload, Data: v}
}
