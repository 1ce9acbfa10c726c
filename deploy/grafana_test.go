package deploy_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// metricLabels lists the metrics the dashboard shows and their labels: the
// metric names of DESIGN.md §3, and those of asynq's queue collector
// (github.com/hibiken/asynq/x/metrics).
var metricLabels = map[string][]string{
	"agentfix_webhook_deliveries_total":    {"event", "outcome"},
	"agentfix_jobs_total":                  {"kind", "outcome"},
	"agentfix_job_duration_seconds":        nil,
	"agentfix_job_cost_usd":                nil,
	"agentfix_agent_steps_total":           nil,
	"agentfix_model_tokens_total":          {"provider", "type"},
	"agentfix_model_errors_total":          {"provider"},
	"agentfix_github_requests_total":       {"status"},
	"agentfix_github_rate_limit_remaining": nil,
	"agentfix_budget_spent_usd":            {"scope"},
	"asynq_tasks_enqueued_total":           {"queue", "state"},
	"asynq_queue_size":                     {"queue"},
	"asynq_queue_latency_seconds":          {"queue"},
	"asynq_tasks_processed_total":          {"queue"},
	"asynq_tasks_failed_total":             {"queue"},
}

// optionalMetrics need not appear in a panel.
var optionalMetrics = map[string]bool{
	"asynq_tasks_processed_total": true,
	"asynq_tasks_failed_total":    true,
}

type grafanaDashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaPanel struct {
	ID         int                `json:"id"`
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Datasource *grafanaDatasource `json:"datasource"`
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct {
		Datasource *grafanaDatasource `json:"datasource"`
		Expr       string             `json:"expr"`
		RefID      string             `json:"refId"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

var (
	metricName = regexp.MustCompile(`\b(?:agentfix|asynq)_[a-z_]+\b`)
	byClause   = regexp.MustCompile(`\bby \(([^)]*)\)`)
)

func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if d.Title == "" || d.UID == "" {
		t.Errorf("title %q, uid %q: want both", d.Title, d.UID)
	}
	var dsVar bool
	for _, v := range d.Templating.List {
		dsVar = dsVar || (v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus")
	}
	if !dsVar {
		t.Errorf("templating: no variable datasource of type datasource for prometheus")
	}

	shown := map[string]bool{}
	ids := map[int]bool{}
	var boxes []grafanaPanel
	var walk func(ps []grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel %q: id %d is taken", p.Title, p.ID)
			}
			ids[p.ID] = true
			boxes = append(boxes, p)
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q: no queries", p.Title)
			}
			for _, ds := range append([]*grafanaDatasource{p.Datasource}, targetSources(p)...) {
				if ds == nil || ds.UID != "${datasource}" {
					t.Errorf("panel %q: datasource %+v, want the ${datasource} variable", p.Title, ds)
				}
			}
			for _, q := range p.Targets {
				checkExpr(t, p.Title, q.Expr, shown)
			}
		}
	}
	walk(d.Panels)

	for _, m := range sortedKeys(metricLabels) {
		if !shown[m] && !optionalMetrics[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
	for i, a := range boxes {
		if a.GridPos.W < 1 || a.GridPos.H < 1 || a.GridPos.X < 0 || a.GridPos.X+a.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24 columns", a.Title, a.GridPos)
		}
		for _, b := range boxes[i+1:] {
			if overlap(a, b) {
				t.Errorf("panels %q and %q overlap", a.Title, b.Title)
			}
		}
	}
}

// checkExpr checks that a panel's query names only known metrics, groups
// them by labels they have, and has balanced brackets; it marks the metrics
// in shown.
func checkExpr(t *testing.T, title, expr string, shown map[string]bool) {
	t.Helper()
	labels := []string{"le"} // of histogram buckets
	for _, name := range metricName.FindAllString(expr, -1) {
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suffix); ok {
				if _, known := metricLabels[b]; known {
					base = b
				}
			}
		}
		ls, ok := metricLabels[base]
		if !ok {
			t.Errorf("panel %q: unknown metric %s in %s", title, name, expr)
			continue
		}
		shown[base] = true
		labels = append(labels, ls...)
	}
	for _, m := range byClause.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); !slices.Contains(labels, l) {
				t.Errorf("panel %q: groups by %q, a label none of its metrics has: %s", title, l, expr)
			}
		}
	}
	depth := map[rune]int{}
	for _, r := range expr {
		switch r {
		case '(', '[', '{':
			depth[r]++
		case ')':
			depth['(']--
		case ']':
			depth['[']--
		case '}':
			depth['{']--
		}
	}
	for r, n := range depth {
		if n != 0 {
			t.Errorf("panel %q: unbalanced %c in %s", title, r, expr)
		}
	}
}

func targetSources(p grafanaPanel) []*grafanaDatasource {
	var out []*grafanaDatasource
	for _, q := range p.Targets {
		out = append(out, q.Datasource)
	}
	return out
}

func overlap(a, b grafanaPanel) bool {
	ga, gb := a.GridPos, b.GridPos
	return ga.X < gb.X+gb.W && gb.X < ga.X+ga.W && ga.Y < gb.Y+gb.H && gb.Y < ga.Y+ga.H
}
