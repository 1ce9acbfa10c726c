package admin

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/runs"
)

const (
	// defaultListLimit is how many runs /admin/runs shows; ?limit= asks
	// for up to maxListLimit.
	defaultListLimit = 100
	maxListLimit     = 1000
	// scanLimit is how many of the most recent runs the list reads: it
	// filters them and offers their repositories and statuses as the
	// filter's choices.
	scanLimit = 1000
	// listRefresh and runRefresh are the seconds after which the runs
	// page (while a listed run runs) and a running run's page reload.
	listRefresh = 10
	runRefresh  = 5
)

// runsView is the data of the runs page.
type runsView struct {
	Runs []runRow
	// More is set when more runs match than Limit.
	More  bool
	Limit int
	// CustomLimit is set when Limit is not the default (the filter keeps
	// it).
	CustomLimit bool
	Retention   time.Duration
	// Scanned is how many of the most recent runs were read, ScanLimit
	// the most that are.
	Scanned, ScanLimit int
	Filter             runFilter
	// Repos and Statuses are the filter's choices: those of the scanned
	// runs, with how many of them have each.
	Repos, Statuses []filterOption
	// TotalUSD is the spend of the listed runs.
	TotalUSD float64
	// Running is set when a listed run is running: the page reloads
	// after Reload seconds.
	Running bool
	Reload  int
}

// runFilter narrows the list: to a repository (without case, as GitHub
// compares names), a status, a delivery (the runs a task started). Empty
// fields match everything.
type runFilter struct {
	Repo, Status, Delivery string
}

// Active reports whether the filter narrows the list at all.
func (f runFilter) Active() bool { return f.Repo != "" || f.Status != "" || f.Delivery != "" }

func (f runFilter) match(m runs.Meta) bool {
	return (f.Repo == "" || strings.EqualFold(f.Repo, m.Repo)) &&
		(f.Status == "" || f.Status == m.Status) &&
		(f.Delivery == "" || f.Delivery == m.DeliveryID)
}

// filterOption is one choice of a filter.
type filterOption struct {
	Value, Label string
	Count        int
	Selected     bool
}

// runRow is one run in the list.
type runRow struct {
	runs.Meta
	Status, Exit statusView
	// Target is "issue #N" or "PR #N", TargetURL its link on GitHub.
	Target, TargetURL string
	WallTime          time.Duration
}

func (s *Server) runList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := defaultListLimit
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxListLimit {
			s.message(w, r, http.StatusBadRequest, "Bad limit", "The limit (?limit=) must be a whole number from 1 to "+strconv.Itoa(maxListLimit)+", not "+strconv.Quote(l)+".")
			return
		}
		limit = n
	}
	metas, err := s.runs.List(r.Context(), scanLimit)
	if err != nil {
		s.log.Error("list runs", logattr.Path, r.URL.Path, logattr.Err, err)
		s.message(w, r, http.StatusServiceUnavailable, "Runs unavailable", "The run records could not be read from Redis; try again shortly.")
		return
	}
	f := runFilter{Repo: strings.TrimSpace(q.Get("repo")), Status: strings.TrimSpace(q.Get("status")), Delivery: q.Get("delivery")}
	v := listRuns(metas, f, limit, s.webURL, s.now())
	v.Retention = s.runs.Retention()
	if v.Running {
		v.Reload = listRefresh
	}
	s.renderPage(w, r, http.StatusOK, "runs", page{Title: "Runs", Nav: "runs", Refresh: v.Reload, Data: v})
}

// listRuns returns the runs page for metas, the most recent runs newest
// first: those f matches, at most limit of them, and the filter's choices.
func listRuns(metas []runs.Meta, f runFilter, limit int, webURL string, now time.Time) runsView {
	v := runsView{Limit: limit, CustomLimit: limit != defaultListLimit, Scanned: len(metas), ScanLimit: scanLimit, Filter: f}
	repos, statuses := map[string]int{}, map[string]int{}
	repoNames := map[string]string{}
	for _, m := range metas {
		if key := strings.ToLower(m.Repo); key != "" {
			repos[key]++
			if _, ok := repoNames[key]; !ok {
				repoNames[key] = m.Repo
			}
		}
		statuses[m.Status]++
		if !f.match(m) {
			continue
		}
		if len(v.Runs) == limit {
			v.More = true
			continue
		}
		row := runRow{
			Meta: m, Status: describeStatus(m.Status), Exit: describeExit(m.ExitStatus),
			Target: target(m), TargetURL: targetURL(webURL, m), WallTime: runDuration(m, now),
		}
		v.Runs = append(v.Runs, row)
		v.TotalUSD += m.CostUSD
		v.Running = v.Running || m.Status == runs.StatusRunning
	}
	for key, n := range repos {
		v.Repos = append(v.Repos, filterOption{Value: repoNames[key], Label: repoNames[key], Count: n, Selected: f.Repo != "" && strings.EqualFold(f.Repo, key)})
	}
	sort.Slice(v.Repos, func(i, j int) bool { return strings.ToLower(v.Repos[i].Value) < strings.ToLower(v.Repos[j].Value) })
	if f.Repo != "" && repos[strings.ToLower(f.Repo)] == 0 {
		v.Repos = append(v.Repos, filterOption{Value: f.Repo, Label: f.Repo, Selected: true})
	}
	v.Statuses = statusOptions(statuses, f.Status)
	return v
}

// statusOptions lists the statuses counted, known ones in the order of
// runStatuses and then any others, plus the selected one when no run has
// it.
func statusOptions(counts map[string]int, selected string) []filterOption {
	var out []filterOption
	known := map[string]bool{}
	for _, d := range runStatuses {
		known[d.value] = true
		if n := counts[d.value]; n > 0 || d.value == selected {
			out = append(out, filterOption{Value: d.value, Label: d.label, Count: n, Selected: d.value == selected})
		}
	}
	var others []string
	for st := range counts {
		if !known[st] {
			others = append(others, st)
		}
	}
	if selected != "" && !known[selected] && counts[selected] == 0 {
		others = append(others, selected)
	}
	sort.Strings(others)
	for _, st := range others {
		out = append(out, filterOption{Value: st, Label: describeStatus(st).Label, Count: counts[st], Selected: st == selected})
	}
	return out
}

// runsURL is the path of the runs page filtered by f.
func runsURL(f runFilter) string {
	q := url.Values{}
	for k, v := range map[string]string{"repo": f.Repo, "status": f.Status, "delivery": f.Delivery} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return "/admin/runs"
	}
	return "/admin/runs?" + q.Encode()
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
