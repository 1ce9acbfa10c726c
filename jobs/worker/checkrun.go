package worker

import (
	"context"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
)

// CheckRunName is the name of the bot's check run.
const CheckRunName = "agentfix"

// checkData is the data of the check run summary.
type checkData struct {
	Outcome    string
	Issue      int
	Requester  string
	ExitStatus agent.ExitStatus
	Detail     string
	Model      string
	Steps      int
	CostUSD    float64
	Duration   time.Duration
	RunID      string
	// Verification says how the change was checked (verificationOf).
	Verification string
}

// startCheck creates the agentfix check run on the pushed commit, in
// progress; failures are logged (the App may lack the checks permission).
func (j *job) startCheck(ctx context.Context, commit, runID string, res agent.Result) int64 {
	summary, err := j.w.texts.render(tmplCheckRun, checkData{Outcome: "running", Issue: j.p.Number, Requester: j.p.Requester.Login,
		Model: j.cfg.Model, Steps: res.Steps, CostUSD: res.CostUSD, Duration: res.Duration, RunID: runID})
	if err == nil {
		var cr ghapp.CheckRun
		cr, err = j.gh.CreateCheckRun(ctx, j.repo, ghapp.NewCheckRun{Name: CheckRunName, HeadSHA: commit, ExternalID: runID,
			Status: "in_progress", Title: "Publishing the agent's change", Summary: summary})
		if err == nil {
			return cr.ID
		}
	}
	j.log.Warn("create check run", logattr.Err, err)
	return 0
}

// finishCheck completes the check run: success for a submitted change,
// neutral for an incomplete one.
func (j *job) finishCheck(ctx context.Context, id int64, runID string, res agent.Result) {
	if id == 0 {
		return
	}
	conclusion, title := "success", "The agent submitted this change"
	if res.Status == agent.Autosubmitted {
		conclusion, title = "neutral", "Incomplete: the run ended before the agent submitted"
	}
	summary, err := j.w.texts.render(tmplCheckRun, checkData{Outcome: conclusion, Issue: j.p.Number, Requester: j.p.Requester.Login,
		ExitStatus: res.Status, Detail: incompleteDetail(res), Model: j.cfg.Model, Steps: res.Steps,
		CostUSD: res.CostUSD, Duration: res.Duration, RunID: runID, Verification: verificationOf(res)})
	if err == nil {
		_, err = j.gh.UpdateCheckRun(ctx, j.repo, id, ghapp.CheckRunUpdate{Name: CheckRunName, Status: "completed",
			Conclusion: conclusion, Title: title, Summary: summary})
	}
	if err != nil {
		j.log.Warn("complete check run", logattr.Err, err)
	}
}

// verificationOf says how a run's change was checked, for check run
// summaries.
func verificationOf(res agent.Result) string {
	switch res.Status {
	case agent.Submitted:
		return "the agent reviewed its own change before submitting it"
	case agent.Autosubmitted:
		return "not reviewed: the change was submitted automatically when the run ended"
	}
	return "no change to verify"
}
