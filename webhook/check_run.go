package webhook

import (
	"encoding/json"
)

// CheckRun handles check_run: a check run that completed with a failure
// on the head of pull requests asks the worker to read their checks, as a
// completed check suite does (check_suite.go); one that passed, or was
// skipped or cancelled, asks nothing, since its suite's completion reads
// every check anyway. The App's own check runs are ignored.
type CheckRun struct{ rules rules }

// checkRunEvent is what routing reads of a check_run payload.
type checkRunEvent struct {
	envelope
	CheckRun struct {
		HeadSHA      string      `json:"head_sha"`
		Conclusion   string      `json:"conclusion"`
		App          checkApp    `json:"app"`
		PullRequests []checkedPR `json:"pull_requests"`
	} `json:"check_run"`
}

// failedConclusions are the conclusions of a check that failed. Neutral,
// skipped, cancelled, stale and action_required are not failures.
var failedConclusions = map[string]bool{"failure": true, "timed_out": true, "startup_failure": true}

func (h *CheckRun) decide(d delivery, body []byte) (decision, error) {
	var ev checkRunEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return decision{}, err
	}
	cr := ev.CheckRun
	return h.rules.routeChecks(checksRequest{
		deliveryID: d.id, action: ev.Action, installation: ev.Installation.ID, repo: toRepo(ev.Repository),
		what: "check run", app: cr.App, head: cr.HeadSHA, prs: cr.PullRequests, failing: failedConclusions[cr.Conclusion],
	})
}

var _ eventHandler = (*CheckRun)(nil)
