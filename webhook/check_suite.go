package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/agentfix/agentfix/jobs"
)

// CheckSuite handles check_suite: when a check suite completes on the head
// of pull requests, the worker reads their checks and starts a ci round on
// each of the bot's own whose checks failed (it decides which are the
// bot's: the payload names pull requests, not their authors). GitHub sends
// the event of every App's check suites to every App with the checks
// permission; the App's own are ignored.
type CheckSuite struct{ rules rules }

// checkSuiteEvent is what routing reads of a check_suite payload.
type checkSuiteEvent struct {
	envelope
	CheckSuite struct {
		HeadSHA      string      `json:"head_sha"`
		App          checkApp    `json:"app"`
		PullRequests []checkedPR `json:"pull_requests"`
	} `json:"check_suite"`
}

// checkApp is the App a check suite or check run belongs to.
type checkApp struct {
	ID   int64  `json:"id"`
	Slug string `json:"slug"`
}

// checkedPR is a pull request a check suite or check run is for: its head
// branch is the suite's.
type checkedPR struct {
	Number int `json:"number"`
}

func (h *CheckSuite) decide(d delivery, body []byte) (decision, error) {
	var ev checkSuiteEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return decision{}, err
	}
	cs := ev.CheckSuite
	return h.rules.routeChecks(checksRequest{
		deliveryID: d.id, action: ev.Action, installation: ev.Installation.ID, repo: toRepo(ev.Repository),
		what: "check suite", app: cs.App, head: cs.HeadSHA, prs: cs.PullRequests, failing: true,
	})
}

var _ eventHandler = (*CheckSuite)(nil)

// checksRequest is a check suite or check run that completed, reduced to
// what routing needs.
type checksRequest struct {
	deliveryID   string
	action       string
	installation int64
	repo         jobs.Repo
	what         string // "check suite" or "check run", for reasons
	app          checkApp
	head         string
	prs          []checkedPR
	// failing is set when the check may have failed: a check suite, or a
	// check run whose conclusion is a failure.
	failing bool
}

// fullSHA is a full commit id as GitHub sends it.
var fullSHA = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// routeChecks decides what a completed check suite or check run asks for:
// a checks task for the pull requests it names, unless it is the App's own
// or names none (the check ran on a branch without a pull request, or on a
// fork's, which GitHub leaves out).
func (r rules) routeChecks(c checksRequest) (decision, error) {
	switch {
	case c.installation == 0:
		return ignored("no installation in the payload (not a GitHub App delivery)"), nil
	case c.action != "completed":
		return ignored("%s action %s needs nothing (only completed)", c.what, c.action), nil
	case r.appID != 0 && c.app.ID == r.appID:
		return ignored("the %s is this App's own", c.what), nil
	case !c.failing:
		return ignored("the %s did not fail; its check suite's completion reads the checks", c.what), nil
	case len(c.prs) == 0:
		return ignored("the %s is on no pull request of this repository", c.what), nil
	}
	errs := []error{checkInstallation(c.installation), checkRepo(c.repo)}
	if !fullSHA.MatchString(c.head) {
		errs = append(errs, fmt.Errorf("head_sha %q is not a commit id", truncate(c.head, 80)))
	}
	var numbers []int
	for _, pr := range c.prs {
		if pr.Number <= 0 {
			errs = append(errs, fmt.Errorf("pull request number %d is not positive", pr.Number))
			continue
		}
		numbers = append(numbers, pr.Number)
	}
	if err := errors.Join(errs...); err != nil {
		return decision{}, err
	}
	return decision{checks: &jobs.ChecksDone{
		DeliveryID: c.deliveryID, Installation: c.installation, Repo: c.repo, HeadSHA: c.head, PRs: numbers,
	}}, nil
}
