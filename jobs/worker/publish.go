package worker

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/proof"
	"github.com/agentfix/agentfix/runs"
	"github.com/agentfix/agentfix/session"
	"github.com/agentfix/agentfix/workspace"
)

// publisher is the publish step: it commits the agent's change with a git
// directory the sandbox never saw, pushes it with a fresh token, opens or
// updates the pull request and writes its body.
type publisher struct {
	cache     RepoCache
	inst      Installations
	texts     *report.Texts
	author    workspace.Identity
	cfg       *config.App
	publicURL string
	linkKey   []byte
	now       func() time.Time
}

// commit commits the job's change: the same commit id on every attempt
// (the agent's end time as the commit time).
func (p *publisher) commit(ctx context.Context, j *job, wt *workspace.WorkTree) (string, error) {
	author, err := p.commitAuthor(ctx)
	if err != nil {
		return "", err
	}
	msg := commitMessage(j)
	if j.message != "" {
		msg = j.message
	}
	return wt.Commit(ctx, workspace.CommitOptions{
		Message:   msg,
		Author:    author,
		CoAuthors: coAuthors(j.requester, j.kept),
		Time:      j.saved.Result.Ended,
	})
}

// push pushes commit to the job's branch with a fresh token.
func (p *publisher) push(ctx context.Context, j *job, wt *workspace.WorkTree, info ghapp.Repository, commit string, force bool) error {
	tok, err := p.inst.Token(ctx, j.install, j.repo)
	if err != nil {
		return err
	}
	return p.cache.Push(ctx, j.repo.String(), wt, workspace.PushOptions{
		Remote: workspace.Remote{URL: info.CloneURL, Token: tok.Value},
		Branch: j.branch, Commit: commit, Force: force,
	})
}

// openPR opens the issue's pull request, or updates the one an earlier
// attempt opened. Where GitHub refuses drafts, a draft becomes a regular
// pull request titled "[incomplete] …" (or "[draft] …" for a submitted
// change with another reason to be a draft).
func (p *publisher) openPR(ctx context.Context, j *job, info ghapp.Repository, draft bool) (ghapp.PullRequest, error) {
	body, err := p.texts.PRBody(p.prBody(j))
	if err != nil {
		return ghapp.PullRequest{}, err
	}
	if pr, found, err := j.gh.FindPR(ctx, j.repo, j.branch); err != nil {
		return ghapp.PullRequest{}, err
	} else if found {
		return j.gh.UpdatePR(ctx, j.repo, pr.Number, ghapp.PullRequestUpdate{Body: &body})
	}
	title := prTitle(j)
	pr, err := j.gh.CreatePR(ctx, j.repo, ghapp.NewPullRequest{Title: title, Body: body, Head: j.branch, Base: info.DefaultBranch, Draft: draft})
	if errors.Is(err, ghapp.ErrDraftUnsupported) {
		mark := report.DraftMark(j.saved.Result.Status == agent.Autosubmitted)
		j.log.Info("drafts are not available; opening a regular pull request titled " + mark)
		pr, err = j.gh.CreatePR(ctx, j.repo, ghapp.NewPullRequest{Title: mark + title, Body: body, Head: j.branch, Base: info.DefaultBranch})
	}
	return pr, err
}

// labelAndRequestReview puts the repository's labels on pull request pr
// and asks the requester (a person) to review it; failures are logged.
func (p *publisher) labelAndRequestReview(ctx context.Context, j *job, pr int) {
	if len(j.cfg.Repo.Labels) > 0 {
		if err := j.gh.AddLabels(ctx, j.repo, pr, j.cfg.Repo.Labels...); err != nil {
			j.log.Warn("add labels to the pull request", logattr.PR, pr, logattr.Err, err)
		}
	}
	if !strings.EqualFold(j.requester.Type, "Bot") {
		if err := j.gh.RequestReviewers(ctx, j.repo, pr, j.requester.Login); err != nil {
			j.log.Warn("request review", logattr.PR, pr, logattr.Err, err)
		}
	}
}

// prBody is the data of the job's pull request body.
func (p *publisher) prBody(j *job) report.PRBody {
	res := j.saved.Result
	d := report.PRBody{
		Issue: j.number, Incomplete: res.Status == agent.Autosubmitted, Detail: report.IncompleteDetail(res), Summary: res.Summary,
		ReviewRounds: j.saved.Review.Rounds, Requester: j.requester.Login, Model: j.saved.Model,
		Steps: res.Steps, CostUSD: res.CostUSD, Duration: res.Duration, RunID: j.saved.RunID, Command: p.cfg.Command,
	}
	p.verification(&d, j)
	d.Environment = j.saved.Environment.Description
	return d
}

// verification fills the facts of a pull request text the harness checked
// itself: the repository's test command and its result, the review, the
// signed link to the run.
func (p *publisher) verification(d *report.PRBody, j *job) {
	rv := j.saved.Review
	d.TestCommand = j.cfg.Repo.Test
	if t := rv.Test; t != nil {
		d.TestCommand, d.TestRan, d.TestPassed, d.TestVerdict, d.TestFinal = t.Command, true, !rv.TestFailed(), report.TestVerdict(t.ExitCode, t.TimedOut), rv.TestedFinal
		if !d.TestPassed {
			d.TestOutput = report.Tail(t.Output, setupTail)
		}
	}
	d.ReviewStages = rv.Stages
	d.RunURL = p.runLink(j.saved.RunID)
	d.DraftReason = ""
	if j.saved.Result.Status != agent.Autosubmitted {
		d.DraftReason = draftReason(j.saved.Result, j.saved.Review, j.cfg.Repo, taskText(j))
	}
	d.Evidence = evidence(j.saved.Review, j.cfg.Repo, taskText(j))
}

// draftReason says why a change opens as a draft pull request, or "" when
// it is ready for review: the agent submitted it, the evidence of its
// tests (proof.Decide under the repository's test_policy) keeps nothing a
// draft, and the repository does not ask for drafts.
func draftReason(res agent.Result, rv session.Review, repo config.RepoSettings, task string) string {
	switch {
	case res.Status == agent.Autosubmitted:
		return report.IncompleteDetail(res)
	case rv.Verdict != nil:
		if d := decide(rv, repo, task); d.Draft {
			return clause(strings.Join(d.Reasons, " "))
		}
	case rv.TestFailed():
		return fmt.Sprintf("the repository's test command %s %s on the change", report.Code(rv.Test.Command), report.TestVerdict(rv.Test.ExitCode, rv.Test.TimedOut))
	}
	if repo.Draft {
		return "this repository's configuration asks for draft pull requests (draft: true)"
	}
	return ""
}

// clause turns sentences into a clause that follows a colon: the first
// letter lower-cased (unless it starts an acronym), the final period
// dropped.
func clause(s string) string {
	s = strings.TrimSuffix(s, ".")
	if len(s) > 1 && s[0] >= 'A' && s[0] <= 'Z' && !(s[1] >= 'A' && s[1] <= 'Z') {
		s = string(s[0]+'a'-'A') + s[1:]
	}
	return s
}

// testChangesAsked tells whether the task asks to change tests, CI or their
// configuration (its title or the requester's instructions say so): the
// integrity guard's flags are then shown, and do not make a draft.
var testChangesAsked = regexp.MustCompile(`(?i)\b(tests?|ci|workflows?|lint(er)?|coverage|flaky)\b`)

// decide applies the repository's test_policy to the evidence of a review.
func decide(rv session.Review, repo config.RepoSettings, task string) proof.Decision {
	policy, _ := proof.ParseRegressionPolicy(repo.TestPolicy.Regression) // validated with the file
	v := rv.Verdict
	return proof.Decide(proof.Policy{Regression: policy, TestChangesAsked: testChangesAsked.MatchString(task)},
		proof.Evidence{Tests: v.Comparison, Proof: v.Proof, NoProof: v.NoProof, Flags: v.Flags})
}

// evidence is the tests' part of the job's pull request texts.
func evidence(rv session.Review, repo config.RepoSettings, task string) *report.Evidence {
	v := rv.Verdict
	if v == nil || v.Test == nil {
		return nil
	}
	e := &report.Evidence{Command: v.Test.Command, Base: "not run", Change: report.TestVerdict(v.Test.ExitCode, v.Test.TimedOut), NoProof: v.NoProof}
	if b := v.Baseline; b != nil {
		e.Base = report.TestVerdict(b.ExitCode, b.TimedOut)
	}
	for _, r := range v.Regressions() {
		line := r.Name + " in " + r.Path
		if first, _, _ := strings.Cut(strings.TrimSpace(r.BaseFailure), "\n"); first != "" {
			line += ": " + report.Code(first)
		}
		e.Proven = append(e.Proven, line)
	}
	if v.Proof != nil {
		for _, u := range v.Proof.Unproven {
			e.Unproven = append(e.Unproven, u.Name+" in "+u.Path+": "+u.Reason)
		}
	}
	if c := v.Comparison; c != nil {
		for _, f := range c.Preexisting {
			e.Preexisting = append(e.Preexisting, f.Label())
		}
		for _, f := range append(c.New, c.Unclear...) {
			e.New = append(e.New, f.Label())
		}
	}
	for _, f := range v.Flags {
		e.Flags = append(e.Flags, f.String())
	}
	e.Notes = decide(rv, repo, task).Notes
	return e
}

// runLink returns the signed link to run runID's page, valid as long as
// the run is kept, or "" without AGENTFIX_PUBLIC_URL.
func (p *publisher) runLink(runID string) string {
	if p.publicURL == "" || len(p.linkKey) == 0 || runID == "" {
		return ""
	}
	link, err := runs.SignLink(p.linkKey, p.publicURL, runID, p.now().Add(p.cfg.RunRetention))
	if err != nil {
		return ""
	}
	return link
}

// commitAuthor is the bot's commit identity.
func (p *publisher) commitAuthor(ctx context.Context) (workspace.Identity, error) {
	if p.author != (workspace.Identity{}) {
		return p.author, nil
	}
	id, err := p.inst.Identity(ctx)
	if err != nil {
		return workspace.Identity{}, fmt.Errorf("commit author: %w", err)
	}
	return workspace.Identity{Name: id.BotLogin, Email: strings.ToLower(id.BotLogin) + "@users.noreply.github.com"}, nil
}

// taskText is what the task asks in words: the issue's title and the
// requester's instructions.
func taskText(j *job) string { return j.issue.Title + "\n" + j.instructions }

// prTitle is the title of an issue's pull request.
func prTitle(j *job) string {
	return fmt.Sprintf("Fix #%d: %s", j.number, report.PlainTitle(j.issue.Title))
}

// commitMessage is the message of the job's commit. It holds no
// model-written text: the summary is in the pull request.
func commitMessage(j *job) string {
	return fmt.Sprintf("Fix #%d: %s\n\nMade by agentfix (run %s) at the request of @%s.",
		j.number, report.PlainTitle(j.issue.Title), j.saved.RunID, j.requester.Login)
}

// coAuthors are the people a commit credits: the requester and whoever
// else a follow-up round answers.
func coAuthors(requester jobs.User, kept []jobs.KeptCommand) []workspace.Identity {
	out := []workspace.Identity{userIdentity(requester)}
	seen := map[string]bool{strings.ToLower(requester.Login): true}
	for _, c := range kept {
		if !seen[strings.ToLower(c.Requester.Login)] {
			seen[strings.ToLower(c.Requester.Login)] = true
			out = append(out, userIdentity(c.Requester))
		}
	}
	return out
}

// userIdentity is a GitHub user as a commit co-author, with GitHub's
// noreply address so the commit is linked to their account.
func userIdentity(u jobs.User) workspace.Identity {
	email := u.Login + "@users.noreply.github.com"
	if u.ID > 0 {
		email = fmt.Sprintf("%d+%s@users.noreply.github.com", u.ID, u.Login)
	}
	return workspace.Identity{Name: u.Login, Email: email}
}
