package admin

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/runs"
)

func TestListRuns(t *testing.T) {
	meta := func(id, repo, status, delivery string, cost float64) runs.Meta {
		return runs.Meta{RunID: id, Repo: repo, Status: status, DeliveryID: delivery, CostUSD: cost, Started: t0}
	}
	// Newest first, as runs.Store.List returns them.
	metas := []runs.Meta{
		meta("r5", "octo/hello", "running", "d-5", 0.25),
		meta("r4", "Octo/Hello", "pr_opened", "d-4", 1.5),
		meta("r3", "octo/other", "failed", "d-3", 0.125),
		meta("r2", "octo/hello", "failed", "d-2", 2),
		meta("r1", "octo/hello", "brand_new", "d-2", 1),
	}
	ids := func(v runsView) []string {
		var out []string
		for _, r := range v.Runs {
			out = append(out, r.RunID)
		}
		return out
	}
	tests := []struct {
		name    string
		filter  runFilter
		limit   int
		want    []string
		total   float64
		more    bool
		running bool
	}{
		{"everything", runFilter{}, 100, []string{"r5", "r4", "r3", "r2", "r1"}, 4.875, false, true},
		{"a repository, without case", runFilter{Repo: "OCTO/hello"}, 100, []string{"r5", "r4", "r2", "r1"}, 4.75, false, true},
		{"a status", runFilter{Status: "failed"}, 100, []string{"r3", "r2"}, 2.125, false, false},
		{"both", runFilter{Repo: "octo/hello", Status: "failed"}, 100, []string{"r2"}, 2, false, false},
		{"a delivery", runFilter{Delivery: "d-2"}, 100, []string{"r2", "r1"}, 3, false, false},
		{"the limit", runFilter{Repo: "octo/hello"}, 2, []string{"r5", "r4"}, 1.75, true, true},
		{"nothing matches", runFilter{Status: "cancelled"}, 100, nil, 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := listRuns(metas, tt.filter, tt.limit, "", t0)
			if diff := cmp.Diff(tt.want, ids(v)); diff != "" {
				t.Errorf("runs listed (-want +got):\n%s", diff)
			}
			if v.TotalUSD != tt.total || v.More != tt.more || v.Running != tt.running {
				t.Errorf("total %v, more %v, running %v; want %v, %v, %v", v.TotalUSD, v.More, v.Running, tt.total, tt.more, tt.running)
			}
		})
	}

	t.Run("choices", func(t *testing.T) {
		v := listRuns(metas, runFilter{Repo: "octo/gone", Status: "cancelled"}, 100, "", t0)
		wantRepos := []filterOption{
			{Value: "octo/hello", Label: "octo/hello", Count: 4},
			{Value: "octo/other", Label: "octo/other", Count: 1},
			{Value: "octo/gone", Label: "octo/gone", Selected: true},
		}
		if diff := cmp.Diff(wantRepos, v.Repos); diff != "" {
			t.Errorf("repository choices (-want +got):\n%s", diff)
		}
		wantStatuses := []filterOption{
			{Value: "running", Label: "Running", Count: 1},
			{Value: "pr_opened", Label: "Pull request opened", Count: 1},
			{Value: "failed", Label: "Failed", Count: 2},
			{Value: "cancelled", Label: "Cancelled", Selected: true},
			{Value: "brand_new", Label: "brand_new", Count: 1},
		}
		if diff := cmp.Diff(wantStatuses, v.Statuses); diff != "" {
			t.Errorf("status choices (-want +got):\n%s", diff)
		}
	})

	t.Run("wall time", func(t *testing.T) {
		v := listRuns(metas[:1], runFilter{}, 100, "", t0.Add(45*time.Minute))
		if got := dur(v.Runs[0].WallTime); got != "45 min" {
			t.Errorf("wall time of a run started 45 minutes ago = %s, want 45 min", got)
		}
	})
}

func TestRunsURL(t *testing.T) {
	tests := []struct {
		f    runFilter
		want string
	}{
		{runFilter{}, "/admin/runs"},
		{runFilter{Delivery: "d 1&x"}, "/admin/runs?delivery=d+1%26x"},
		{runFilter{Repo: "o/r", Status: "failed"}, "/admin/runs?repo=o%2Fr&status=failed"},
	}
	for _, tt := range tests {
		if got := runsURL(tt.f); got != tt.want {
			t.Errorf("runsURL(%+v) = %q, want %q", tt.f, got, tt.want)
		}
	}
}
