package worker

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentfix/agentfix/ghapp"
)

// editRecorder records the status comment edits; the rest of GitHub is
// not used by a statusComment.
type editRecorder struct {
	GitHub
	edits []string
}

func (e *editRecorder) EditComment(_ context.Context, _ ghapp.Repo, _ int64, body string) (ghapp.Comment, error) {
	e.edits = append(e.edits, body)
	return ghapp.Comment{}, nil
}

// TestStatusCommentPace: a phase change is shown at once, progress within a
// phase at most every interval, and an unchanged body never.
func TestStatusCommentPace(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	gh := &editRecorder{}
	s := &statusComment{gh: gh, texts: mustTexts(t), interval: DefaultStatusInterval, now: func() time.Time { return now },
		log: slog.New(slog.DiscardHandler), data: statusData{Requester: "alice", Phase: PhaseQueued, MaxSteps: 75, MaxCostUSD: 3}}
	ctx := context.Background()
	step := func(n int) func(*statusData) {
		return func(d *statusData) { d.Step, d.CostUSD = n, float64(n)/100 }
	}
	tests := []struct {
		name    string
		advance time.Duration
		edit    func(*statusData)
		force   bool
		edited  bool
	}{
		{"phase change", 0, func(d *statusData) { d.Phase = PhaseWorking }, false, true},
		{"progress 10 s later", 10 * time.Second, step(1), false, false},
		{"progress 29 s after the edit", 19 * time.Second, step(2), false, false},
		{"progress 30 s after the edit", time.Second, step(3), false, true},
		{"phase change 1 s later", time.Second, func(d *statusData) { d.Phase = PhaseReviewing }, false, true},
		{"forced but unchanged", 0, func(*statusData) {}, true, false},
		{"forced change", 0, func(d *statusData) { d.Phase = PhasePushing }, true, true},
	}
	for _, tt := range tests {
		now = now.Add(tt.advance)
		before := len(gh.edits)
		if err := s.show(ctx, tt.edit, tt.force); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := len(gh.edits) > before; got != tt.edited {
			t.Errorf("%s: edited = %v, want %v", tt.name, got, tt.edited)
		}
	}
	if last := gh.edits[len(gh.edits)-1]; !strings.Contains(last, "📤 **Pushing**") {
		t.Errorf("last edit:\n%s", last)
	}
	if third := gh.edits[1]; !strings.Contains(third, "step 3 of 75 · $0.03") {
		t.Errorf("the 30 s edit shows the latest progress, got:\n%s", third)
	}
}
