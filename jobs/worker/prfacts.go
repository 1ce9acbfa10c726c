package worker

import (
	"context"
	"fmt"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/runs"
	"github.com/agentfix/agentfix/tools"
)

// noteReview keeps what the harness saw of the review (tools.ReviewState)
// with the run's result: the review messages shown, and the last result of
// the repository's test command and whether it ran on the final patch.
func (r *agentRun) noteReview(st tools.ReviewState, patch string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.review.Rounds, r.review.Stages = st.StagesShown, st.Stages
	r.review.Test = st.LastTest
	r.review.TestedFinal = st.LastTest != nil && st.TestedDiff == patch
}

// testFailed reports whether the repository's test command failed on the
// change as last reviewed.
func (p reviewProgress) testFailed() bool {
	return p.Test != nil && (p.Test.TimedOut || p.Test.ExitCode != 0)
}

// draftReason says why the change of saved opens as a draft pull request,
// or "" when it is ready for review: the agent submitted it and the
// repository's test command, if any, passed on it.
func (j *job) draftReason(saved savedResult) string {
	switch {
	case saved.Result.Status == agent.Autosubmitted:
		return incompleteDetail(saved.Result)
	case saved.Review.testFailed():
		return fmt.Sprintf("the repository's test command %s %s on the change", codeSpan(saved.Review.Test.Command), testVerdict(saved.Review.Test))
	case j.cfg.Repo.Draft:
		return "this repository's configuration asks for draft pull requests (draft: true)"
	}
	return ""
}

// testVerdict says how a test command ended: "passed", "failed with exit
// code 2", "timed out".
func testVerdict(t *tools.TestResult) string {
	switch {
	case t.TimedOut:
		return "timed out"
	case t.ExitCode == 0:
		return "passed"
	}
	return fmt.Sprintf("failed with exit code %d", t.ExitCode)
}

// verification fills the facts of the pull request body the harness
// checked itself: the repository's test command and its result, the
// review, the signed link to the run.
func (j *job) verification(d *prBodyData, saved savedResult, runID string) {
	rv := saved.Review
	d.TestCommand = j.cfg.Repo.Test
	if t := rv.Test; t != nil {
		d.TestCommand, d.TestRan, d.TestPassed, d.TestVerdict, d.TestFinal = t.Command, true, !rv.testFailed(), testVerdict(t), rv.TestedFinal
		if !d.TestPassed {
			d.TestOutput = tailBytes(t.Output, setupTail)
		}
	}
	d.ReviewStages = rv.Stages
	d.RunURL = j.w.runLink(runID)
	d.DraftReason = ""
	if saved.Result.Status != agent.Autosubmitted {
		d.DraftReason = j.draftReason(saved)
	}
}

// runLink returns the signed link to run runID's page, valid as long as
// the run is kept, or "" without AGENTFIX_PUBLIC_URL.
func (w *Worker) runLink(runID string) string {
	if w.opts.PublicURL == "" || len(w.opts.LinkKey) == 0 || runID == "" {
		return ""
	}
	link, err := runs.SignLink(w.opts.LinkKey, w.opts.PublicURL, runID, w.now().Add(w.opts.Config.RunRetention))
	if err != nil {
		w.log.Warn("sign the run link", logattr.RunID, runID, logattr.Err, err)
		return ""
	}
	return link
}

// addLabels puts the repository's labels (config labels) on the bot's
// pull request; a failure is logged.
func (j *job) addLabels(ctx context.Context, pr int) {
	if len(j.cfg.Repo.Labels) == 0 {
		return
	}
	if err := j.gh.AddLabels(ctx, j.repo, pr, j.cfg.Repo.Labels...); err != nil {
		j.log.Warn("add labels to the pull request", logattr.PR, pr, logattr.Err, err)
	}
}
