package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/runs"
	"github.com/agentfix/agentfix/workspace"
)

// publishTimeout bounds the whole publication of a result (commit, push,
// pull request, reports); it goes on when the job's context is cancelled.
const publishTimeout = 15 * time.Minute

// publish reports the agent's result by its exit status: a change is
// committed, pushed and offered as a pull request (ready when submitted, a
// draft marked incomplete when autosubmitted), continuing the open bot PR
// when there is one; anything else ends with a final comment saying why
// there is no pull request.
func (j *job) publish(ctx context.Context, wt *workspace.WorkTree, saved savedResult, t target) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	res, pr, runID := saved.Result, t.pr, j.rec.ID()
	// A stop or a closed issue that came while the agent finished wins.
	if m, ok, err := j.w.state.cancelFor(ctx, j.taskID, j.p.DeliveryID); err != nil {
		return outcomeError, err
	} else if ok {
		return j.cancelled(ctx, m, res)
	}
	if (res.Status != agent.Submitted && res.Status != agent.Autosubmitted) || res.Patch == "" {
		if res.Status == agent.Submitted || res.Status == agent.Autosubmitted {
			return j.report(ctx, saved, outcomeNoChanges, "the agent finished without changing any file.", "")
		}
		return j.report(ctx, saved, outcomeFailed, noPRDetail(res), "")
	}
	changes, err := wt.Changes(ctx)
	if err != nil {
		return outcomeError, err
	}
	if len(changes.Workflows) > 0 && !j.cfg.AllowWorkflowChanges {
		detail := fmt.Sprintf("the change touches %s, and the bot may not change workflows in this repository.",
			strings.Join(changes.Workflows, ", "))
		return j.report(ctx, saved, outcomeRefused, detail, res.Patch)
	}
	author, err := j.w.commitAuthor(ctx)
	if err != nil {
		return outcomeError, err
	}
	commit, err := wt.Commit(ctx, workspace.CommitOptions{
		Message:   j.commitMessage(runID),
		Author:    author,
		CoAuthors: j.coAuthors(),
		Time:      res.Ended, // the same commit id on every attempt
	})
	if errors.Is(err, workspace.ErrNoChanges) {
		return j.report(ctx, saved, outcomeNoChanges, "the agent's change is empty.", "")
	}
	if err != nil {
		return outcomeError, err
	}
	_ = j.status.show(ctx, func(d *statusData) { d.Phase = PhasePushing }, true)
	if err := j.push(ctx, wt, t.info, commit, !t.hasPR); errors.Is(err, workspace.ErrNonFastForward) {
		detail := fmt.Sprintf("someone else pushed to `%s` while the agent worked; ask again to start from the new state.", j.branch)
		return j.report(ctx, saved, outcomeFailed, detail, res.Patch)
	} else if err != nil {
		return outcomeError, err
	}
	check := j.startCheck(ctx, commit, runID, res)
	incomplete := res.Status == agent.Autosubmitted
	draftWhy := j.draftReason(saved) // a new pull request opens as a draft when set
	outcome := outcomePROpened
	switch {
	case t.hasPR:
		outcome = outcomePRUpdated
		if j.round == nil { // a fix job's retry that continued a PR before rounds moved to revise tasks
			if err := j.roundComment(ctx, pr, commit, runID, saved); err != nil {
				return outcomeError, err
			}
		}
	default:
		if incomplete {
			outcome = outcomeDraftOpened
		}
		if pr, err = j.openPR(ctx, saved, runID, t.info, draftWhy != ""); err != nil {
			return outcomeError, err
		}
	}
	j.addLabels(ctx, pr.Number)
	if !strings.EqualFold(j.p.Requester.Type, "Bot") {
		if err := j.gh.RequestReviewers(ctx, j.repo, pr.Number, j.p.Requester.Login); err != nil {
			j.log.Warn("request review", logattr.PR, pr.Number, logattr.Err, err)
		}
	}
	j.finishCheck(ctx, check, runID, res)
	j.endRound(ctx, outcome, commit, res)
	if j.round != nil {
		j.round.ready = j.markReady(ctx, &saved, outcome, commit)
	}
	draft, detail := incomplete || (!t.hasPR && draftWhy != ""), ""
	if draft {
		detail = draftWhy
	}
	_ = j.status.show(ctx, func(d *statusData) {
		d.Phase, d.Outcome, d.PRNumber, d.PRURL, d.Draft, d.Detail = PhaseDone, outcome, pr.Number, pr.HTMLURL, draft, detail
	}, true)
	if err := j.finalComment(ctx, finalData{Outcome: outcome, PRNumber: pr.Number, PRURL: pr.HTMLURL, Draft: draft, Detail: detail}, res); err != nil {
		return outcomeError, err
	}
	j.record(ctx, res, func(m *runs.Meta) { m.Status, m.PR, m.PRURL = outcome, pr.Number, pr.HTMLURL })
	j.done(ctx, saved, publishedResult{Outcome: outcome, PR: pr.Number, PRURL: pr.HTMLURL})
	return outcome, nil
}

// push pushes commit to the job's branch with a fresh token.
func (j *job) push(ctx context.Context, wt *workspace.WorkTree, info ghapp.Repository, commit string, force bool) error {
	tok, err := j.w.opts.GitHub.Token(ctx, j.p.Installation, j.repo)
	if err != nil {
		return err
	}
	return j.w.opts.Cache.Push(ctx, j.repo.String(), wt, workspace.PushOptions{
		Remote: workspace.Remote{URL: info.CloneURL, Token: tok.Value},
		Branch: j.branch, Commit: commit, Force: force,
	})
}

// openPR opens the issue's pull request, or updates the one an earlier
// attempt opened. Where GitHub refuses drafts, a draft becomes a regular
// pull request titled "[incomplete] …" (or "[draft] …" for a submitted
// change whose tests failed, or a repository that asks for drafts).
func (j *job) openPR(ctx context.Context, saved savedResult, runID string, info ghapp.Repository, draft bool) (ghapp.PullRequest, error) {
	body, err := j.prBody(saved, runID, saved.Result.Status == agent.Autosubmitted)
	if err != nil {
		return ghapp.PullRequest{}, err
	}
	if pr, found, err := j.gh.FindPR(ctx, j.repo, j.branch); err != nil {
		return ghapp.PullRequest{}, err
	} else if found {
		return j.gh.UpdatePR(ctx, j.repo, pr.Number, ghapp.PullRequestUpdate{Body: &body})
	}
	title := fmt.Sprintf("Fix #%d: %s", j.p.Number, plainTitle(j.issue.Title))
	pr, err := j.gh.CreatePR(ctx, j.repo, ghapp.NewPullRequest{Title: title, Body: body, Head: j.branch, Base: info.DefaultBranch, Draft: draft})
	if errors.Is(err, ghapp.ErrDraftUnsupported) {
		mark := "[incomplete] "
		if saved.Result.Status != agent.Autosubmitted {
			mark = "[draft] "
		}
		j.log.Info("drafts are not available; opening a regular pull request titled " + mark)
		pr, err = j.gh.CreatePR(ctx, j.repo, ghapp.NewPullRequest{Title: mark + title, Body: body, Head: j.branch, Base: info.DefaultBranch})
	}
	return pr, err
}

// prBodyData is the data of the pull request body. Of the verification
// (see job.verification): TestCommand is the repository's test command;
// TestRan says it ran in the review, TestVerdict how it ended ("passed",
// "failed with exit code 1", "timed out"), TestFinal that it ran on the
// final change, TestOutput the end of its output when it did not pass.
// ReviewRounds of ReviewStages review messages were shown. DraftReason
// says why a submitted change opens as a draft.
type prBodyData struct {
	Issue        int
	Incomplete   bool
	Detail       string
	Summary      string
	Truncated    int
	TestCommand  string
	TestRan      bool
	TestPassed   bool
	TestVerdict  string
	TestFinal    bool
	TestOutput   string
	ReviewRounds int
	ReviewStages int
	DraftReason  string
	Requester    string
	Model        string
	Steps        int
	CostUSD      float64
	Duration     time.Duration
	RunID        string
	RunURL       string
	Command      string
}

// prBody renders the pull request body, cutting the agent's summary so
// the body stays within GitHub's 65,536 characters, with a visible note.
func (j *job) prBody(saved savedResult, runID string, incomplete bool) (string, error) {
	res := saved.Result
	d := prBodyData{
		Issue: j.p.Number, Incomplete: incomplete, Detail: incompleteDetail(res), Summary: res.Summary,
		ReviewRounds: saved.Review.Rounds, Requester: j.p.Requester.Login, Model: saved.Model,
		Steps: res.Steps, CostUSD: res.CostUSD, Duration: res.Duration, RunID: runID, Command: j.w.opts.Config.Command,
	}
	j.verification(&d, saved, runID)
	return renderPRBody(j.w.texts, d)
}

// renderPRBody renders d within MaxPRBody characters.
func renderPRBody(x texts, d prBodyData) (string, error) {
	full := []rune(d.Summary)
	for range 4 {
		body, err := x.render(tmplPRBody, d)
		if err != nil {
			return "", err
		}
		over := utf8.RuneCountInString(body) - MaxPRBody
		if over <= 0 {
			return body, nil
		}
		keep := len([]rune(d.Summary)) - over - 200 // room for the note
		if keep < 0 {
			keep = 0
		}
		d.Summary, d.Truncated = string(full[:keep]), len(full)-keep
	}
	return "", fmt.Errorf("pull request body stays over %d characters", MaxPRBody)
}

// roundComment tells the open pull request the job continued what it
// pushed, once per job.
func (j *job) roundComment(ctx context.Context, pr ghapp.PullRequest, commit, runID string, saved savedResult) error {
	res := saved.Result
	body, err := j.w.texts.render(tmplPRRound, map[string]any{
		"Marker": ghapp.Marker("round " + j.key), "Requester": j.p.Requester.Login, "Issue": j.p.Number,
		"Commit": commit[:12], "Incomplete": res.Status == agent.Autosubmitted, "Detail": incompleteDetail(res),
		"Summary": res.Summary, "RunID": runID, "Steps": res.Steps, "CostUSD": res.CostUSD,
		"Duration": res.Duration, "Model": saved.Model,
	})
	if err != nil {
		return err
	}
	return j.w.postOnce(ctx, j.gh, j.repo, pr.Number, ghapp.Marker("round "+j.key), body)
}

// report ends a job without a pull request: the status comment and a final
// comment say why (with the partial change, if there is one).
func (j *job) report(ctx context.Context, saved savedResult, outcome, detail, patch string) (string, error) {
	res := saved.Result
	phase := PhaseFailed
	if outcome == outcomeNoChanges {
		phase = PhaseDone
	}
	_ = j.status.show(ctx, func(d *statusData) { d.Phase, d.Outcome, d.Detail = phase, outcome, detail }, true)
	j.endRound(ctx, outcome, "", res)
	if err := j.finalComment(ctx, finalData{Outcome: outcome, Detail: detail, Patch: patch}, res); err != nil {
		return outcomeError, err
	}
	j.record(ctx, res, func(m *runs.Meta) { m.Status = outcome })
	j.done(ctx, saved, publishedResult{Outcome: outcome})
	return outcome, nil
}

// done marks the job reported, so a retry of its task does nothing, and
// records its duration and cost.
func (j *job) done(ctx context.Context, saved savedResult, p publishedResult) {
	saved.Done = &p
	if err := j.w.state.saveResult(ctx, j.key, saved); err != nil {
		j.log.Warn("mark job reported", logattr.Err, err)
	}
	j.w.metrics.agentJob(j.w.now().Sub(j.started), saved.Result.CostUSD)
}

// finalData is the data of the final comment.
type finalData struct {
	Marker, Requester, Command string
	Outcome                    string
	PRNumber                   int
	PRURL                      string
	Draft                      bool
	Detail                     string
	StoppedBy                  string
	Summary                    string
	Patch                      string
	SetupOutput                string // the end of a failed setup command's output
	RunID                      string
	Steps                      int
	CostUSD                    float64
	Duration                   time.Duration
	Model                      string
}

// finalComment posts the job's final comment once, mentioning the
// requester so they are notified.
func (j *job) finalComment(ctx context.Context, d finalData, res agent.Result) error {
	marker := ghapp.Marker("final " + j.key)
	d.Marker, d.Requester, d.Command, d.RunID = marker, j.p.Requester.Login, j.w.opts.Config.Command, j.runID()
	d.Summary, d.Steps, d.CostUSD, d.Duration, d.Model = res.Summary, res.Steps, res.CostUSD, res.Duration, j.cfg.Model
	if len(d.Patch) > maxPatchShown {
		d.Patch = strings.ToValidUTF8(d.Patch[:maxPatchShown], "") + "\n… (truncated)"
	}
	if j.round != nil {
		return j.roundFinal(ctx, d)
	}
	body, err := j.w.texts.render(tmplFinal, d)
	if err != nil {
		return err
	}
	return j.w.postOnce(ctx, j.gh, j.repo, j.thread, marker, body)
}

// commitMessage is the message of the job's commit. It holds no
// model-written text: the summary is in the pull request.
func (j *job) commitMessage(runID string) string {
	return fmt.Sprintf("Fix #%d: %s\n\nMade by agentfix (run %s) at the request of @%s.",
		j.p.Number, plainTitle(j.issue.Title), runID, j.p.Requester.Login)
}

// noPRDetail says in words why a run without a change made no pull
// request (the exit reason itself is in the run record).
func noPRDetail(res agent.Result) string {
	switch res.Status {
	case agent.LimitsExceeded:
		return fmt.Sprintf("the agent reached a limit before it had a change (%s).", res.Reason)
	case agent.FormatErrorExit:
		return "the model's replies could not be used, several times in a row."
	case agent.ContextExceeded:
		return "the conversation outgrew the model's context window before the agent had a change."
	case agent.EnvDead:
		return "the sandbox stopped working before the agent had a change."
	case agent.APIError:
		return "the model provider kept failing before the agent had a change."
	}
	return "an internal error ended the run before the agent had a change."
}

// incompleteDetail says why an autosubmitted change is incomplete; empty
// for a submitted one.
func incompleteDetail(res agent.Result) string {
	if res.Status != agent.Autosubmitted {
		return ""
	}
	switch res.Cause {
	case agent.LimitsExceeded:
		return strings.TrimPrefix(res.Reason, string(agent.LimitsExceeded)+": ")
	case agent.FormatErrorExit:
		return "the model's replies could not be used"
	case agent.ContextExceeded:
		return "the conversation outgrew the model's context window"
	case agent.EnvDead:
		return "the sandbox stopped working"
	case agent.APIError:
		return "the model provider kept failing"
	}
	return "an internal error ended the run"
}

// commitAuthor is the bot's commit identity.
func (w *Worker) commitAuthor(ctx context.Context) (workspace.Identity, error) {
	if w.opts.CommitAuthor != (workspace.Identity{}) {
		return w.opts.CommitAuthor, nil
	}
	id, err := w.opts.GitHub.Identity(ctx)
	if err != nil {
		return workspace.Identity{}, fmt.Errorf("commit author: %w", err)
	}
	return workspace.Identity{Name: id.BotLogin, Email: strings.ToLower(id.BotLogin) + "@users.noreply.github.com"}, nil
}
