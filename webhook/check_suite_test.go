package webhook

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/jobs"
)

// TestChecksAndPushQueueOneTaskEach: a completed check suite, a failed
// check run and a push to the default branch each become one interactive
// task, whose payload is what the worker needs; a redelivery of the same
// delivery starts nothing more.
func TestChecksAndPushQueueOneTaskEach(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tests := []struct {
		event, id, file string
		reason          string
		task            string
	}{
		{"check_suite", "d-suite", "check_suite.completed.json", "checks of Codertocat/Hello-World@ec26c3e57ca3 queued for 1 pull requests", "checks:d-suite"},
		{"check_run", "d-run", "check_run.completed.json", "checks of Codertocat/Hello-World@ec26c3e57ca3 queued for 1 pull requests", "checks:d-run"},
		{"push", "d-push", "push.json", "merge check of the pull requests into master of Codertocat/Hello-World queued", "basemoved:d-push"},
	}
	for _, tt := range tests {
		got := h.deliver(t, tt.event, tt.id, payload(t, tt.file))
		if want := (response{Status: "queued", Reason: tt.reason}); got.code != 202 || got.body != want {
			t.Errorf("%s: reply = %d %+v, want 202 %+v", tt.event, got.code, got.body, want)
		}
		again := h.deliver(t, tt.event, tt.id, payload(t, tt.file))
		if again.code != 202 || again.body.Status != "duplicate" {
			t.Errorf("%s redelivered: reply = %d %+v, want 202 duplicate", tt.event, again.code, again.body)
		}
	}
	if diff := cmp.Diff([]string{"basemoved:d-push", "checks:d-run", "checks:d-suite"}, sorted(h.tasks(t, jobs.QueueInteractive))); diff != "" {
		t.Errorf("interactive tasks (-want +got):\n%s", diff)
	}
	if n := len(h.tasks(t, jobs.QueueAgent)); n != 0 {
		t.Errorf("agent tasks = %d, want none: the worker decides on a round", n)
	}
	wantChecks := jobs.ChecksDone{V: jobs.Version, DeliveryID: "d-suite", Installation: testInstallation, Repo: helloWorld, HeadSHA: checkHead, PRs: []int{2}}
	if diff := cmp.Diff(wantChecks, decodeTask[jobs.ChecksDone](t, h, jobs.QueueInteractive, "checks:d-suite")); diff != "" {
		t.Errorf("checks payload (-want +got):\n%s", diff)
	}
	wantMoved := jobs.BaseMoved{V: jobs.Version, DeliveryID: "d-push", Installation: testInstallation, Repo: helloWorld, Branch: "master", After: pushAfter}
	if diff := cmp.Diff(wantMoved, decodeTask[jobs.BaseMoved](t, h, jobs.QueueInteractive, "basemoved:d-push")); diff != "" {
		t.Errorf("basemoved payload (-want +got):\n%s", diff)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	slices.Sort(out)
	return out
}
