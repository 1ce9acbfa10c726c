package worker

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs/worker/report"
)

// readiness is what a round did about its pull request being a draft.
type readiness struct {
	// Marked is set when the round marked the pull request ready for
	// review (or, where GitHub refuses drafts, took the bot's mark off its
	// title).
	Marked bool
	// Failure says, for people, why GitHub did not let it.
	Failure string
}

// markReady marks a round's pull request ready for review when the round
// completed it: the round pushed a change the agent submitted, draftReason
// finds nothing that keeps it a draft (a failed test command, draft: true),
// and the pull request is a draft whose body has the bot's draft notice
// (not one a person made a draft) or has one of the bot's draftMarks in its
// title. A draft is marked ready through GitHub's GraphQL API, a marked
// title loses its mark, and then the body's draft notice gives way to a
// note saying which round completed the change (completeBody). A pull
// request that is no longer a draft but whose body still has the notice
// gets the note without a claim of having marked it. A GitHub failure is
// logged and returned in words for the round's reply; it never fails the
// job. saved.Ready remembers it was done, so a retry of the job says so
// again without asking GitHub twice.
func (w *Worker) markReady(ctx context.Context, j *job, pr ghapp.PullRequest, commit string) readiness {
	completed := j.saved.Result.Status == agent.Submitted && draftReason(j.saved.Result, j.saved.Review, j.cfg.Repo, taskText(j)) == ""
	// pr is as the round read it when it started.
	title, marked := report.CutDraftMark(pr.Title)
	switch readyMoveOf(completed, j.saved.Ready, pr.Draft, report.HasDraftNotice(pr.Body), marked) {
	case leaveAsIs:
		return readiness{}
	case completeBodyOnly:
		w.completeBody(ctx, j, pr, commit)
		return readiness{}
	case alreadyMarked:
		// GitHub was asked on an earlier attempt: the body and the reply
		// below, without asking again.
	case markThenComplete:
		if err := undraft(ctx, j, pr, title, marked); err != nil {
			j.log.Warn("mark the pull request ready for review", logattr.PR, pr.Number, logattr.Err, err)
			return readiness{Failure: report.GitHubTrouble(err)}
		}
		j.saved.Ready = true
		if err := w.store.SaveResult(ctx, j.key, j.saved); err != nil {
			j.log.Warn("remember that the pull request was marked ready", logattr.Err, err)
		}
	}
	w.completeBody(ctx, j, pr, commit)
	return readiness{Marked: true}
}

// readyMove is what a round does about its pull request being a draft.
type readyMove int

const (
	// leaveAsIs: the round did not complete the change, or the draft is
	// not the bot's to undo.
	leaveAsIs readyMove = iota
	// markThenComplete: take the pull request out of draft (or the mark
	// off its title), then complete its body.
	markThenComplete
	// alreadyMarked: an earlier attempt of the job marked it; complete the
	// body and say it was marked, without asking GitHub again.
	alreadyMarked
	// completeBodyOnly: it is ready already with the bot's notice still
	// in its body (someone marked it ready, or a crash kept this job from
	// remembering it did): the body catches up, the reply claims nothing.
	completeBodyOnly
)

// readyMoveOf decides a round's readyMove: completed is set when the round
// pushed a change the agent submitted that nothing keeps a draft
// (draftReason); markedBefore when an earlier attempt of this job marked it
// ready; draft, notice and titleMarked describe the pull request as the
// round read it: a draft, the bot's draft notice in its body, one of the
// bot's draft marks in its title. Only the bot's own drafts are undone: a
// draft whose body lost the notice, or that someone made a draft by hand,
// stays as people left it.
func readyMoveOf(completed, markedBefore, draft, notice, titleMarked bool) readyMove {
	switch {
	case !completed:
		return leaveAsIs
	case markedBefore:
		return alreadyMarked
	case titleMarked || draft && notice:
		return markThenComplete
	case notice && !draft:
		return completeBodyOnly
	}
	return leaveAsIs
}

// undraft takes pull request pr out of draft, and title's mark off it when
// marked.
func undraft(ctx context.Context, j *job, pr ghapp.PullRequest, title string, marked bool) error {
	if pr.Draft {
		if err := j.gh.MarkReadyForReview(ctx, j.repo, pr.Number); err != nil {
			return err
		}
	}
	if marked {
		if _, err := j.gh.UpdatePR(ctx, j.repo, pr.Number, ghapp.PullRequestUpdate{Title: &title}); err != nil {
			return err
		}
	}
	return nil
}

// completeBody rewrites the body of pull request pr once a round completed
// its change (report.Texts.CompletedBody); a failure is logged.
func (w *Worker) completeBody(ctx context.Context, j *job, pr ghapp.PullRequest, commit string) {
	d := report.Completed{Commit: report.ShortSHA(commit)}
	w.publish.verification(&d.PRBody, j)
	d.RunID = j.saved.RunID
	body, ok, err := w.texts.CompletedBody(pr.Body, d)
	switch {
	case err != nil:
		j.log.Warn("render the pull request's completed note", logattr.Err, err)
		return
	case !ok:
		j.log.Info("the pull request's body has no draft notice to replace", logattr.PR, pr.Number)
		return
	}
	if n := utf8.RuneCountInString(body); n > report.MaxPRBody {
		j.log.Warn(fmt.Sprintf("the pull request's body with the completed note would have %d characters; left as it is", n), logattr.PR, pr.Number)
		return
	}
	if _, err := j.gh.UpdatePR(ctx, j.repo, pr.Number, ghapp.PullRequestUpdate{Body: &body}); err != nil {
		j.log.Warn("replace the draft notice in the pull request's body", logattr.PR, pr.Number, logattr.Err, err)
	}
}
