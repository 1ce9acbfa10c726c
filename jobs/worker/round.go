package worker

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/workspace"
)

// maxRoundDiff bounds, in bytes, the pull request diff a round's task
// shows the agent; a longer one is cut with a note saying how to see the
// rest in the working copy.
const maxRoundDiff = 200 << 10

// round is what a revise round knows besides its job: the pull request,
// what asked for the round, the context the agent gets, and what the round
// did.
type round struct {
	pr      ghapp.PullRequest
	author  jobs.User // the pull request's author as the payload named it
	trigger jobs.Trigger
	// kept are the commands a follow-up round answers.
	kept []jobs.KeptCommand

	revision *agent.Revision // nil when the agent does not run (a retry publishing a saved result)
	threads  []thread        // inline threads of the reviews that asked for the round
	bot      string          // the App's bot login
	check    roundCheck      // the check run on the head the round started from

	commit  string          // the commit the round pushed
	changed map[string]bool // the files it changed
	dropped []string        // who had commands kept that a stop dropped
	ready   readiness       // whether it marked the pull request ready for review
}

// thread is an inline review thread the round answers.
type thread struct {
	root         int64 // the thread's first comment
	path, author string
}

// revision is the review context of the job's agent task, nil for a fix.
func (j *job) revision() *agent.Revision {
	if j.round == nil {
		return nil
	}
	return j.round.revision
}

// reviewIDs are the reviews whose inline threads the round answers: the
// triggering one's and those of the kept commands.
func (r *round) reviewIDs() map[int64]bool {
	ids := map[int64]bool{}
	for _, t := range append([]jobs.Trigger{r.trigger}, keptTriggers(r.kept)...) {
		if t.ReviewID != 0 {
			ids[t.ReviewID] = true
		}
	}
	return ids
}

func keptTriggers(kept []jobs.KeptCommand) []jobs.Trigger {
	out := make([]jobs.Trigger, 0, len(kept))
	for _, c := range kept {
		out = append(out, c.Trigger)
	}
	return out
}

// startRound puts the round's check run, in progress, on the head commit
// the round starts from, finds the inline threads it will answer and, when
// the agent is about to run, builds its review context: the pull request's
// diff from the cache, the triggering review's body, and the review
// comments of people with write access.
func (j *job) startRound(ctx context.Context, t target, agentRuns bool) error {
	r := j.round
	j.startRoundCheck(ctx, t.base)
	comments, err := j.reviewComments(ctx)
	if err != nil {
		return err
	}
	r.bot, r.threads = comments.bot, threadsOf(comments.all, r.reviewIDs(), comments.bot)
	if !agentRuns {
		return nil
	}
	base := t.branches[r.pr.Base]
	if base == "" {
		return fmt.Errorf("base branch %s of pull request #%d is not on the git server", r.pr.Base, r.pr.Number)
	}
	diff, err := j.w.opts.Cache.Diff(ctx, j.repo.String(), base, t.base, maxRoundDiff)
	if err != nil {
		return err
	}
	patch := diff.Patch
	if diff.Truncated {
		patch += fmt.Sprintf("\n… (the diff is cut here: it is longer than %d KiB; run `git diff %s HEAD` in /workspace for the rest)\n",
			maxRoundDiff>>10, diff.MergeBase)
	}
	r.revision = &agent.Revision{PR: r.pr.Number, Diff: patch, Comments: comments.forAgent}
	if r.trigger.Kind == jobs.TriggerReview && r.trigger.ReviewID != 0 {
		if err := j.addReviewBody(ctx); err != nil {
			return err
		}
	}
	j.log.Info(fmt.Sprintf("round context: diff of %d bytes, %d review comments, %d left out, %d threads to answer",
		len(patch), len(comments.forAgent), comments.leftOut, len(r.threads)))
	return nil
}

// addReviewBody puts the triggering review's whole body into the task. For
// a round of that review alone, its body replaces the command's
// instructions, which are part of it.
func (j *job) addReviewBody(ctx context.Context) error {
	r := j.round
	reviews, err := j.gh.ListReviews(ctx, j.repo, r.pr.Number)
	if err != nil {
		return err
	}
	for _, rv := range reviews {
		if rv.ID == r.trigger.ReviewID && strings.TrimSpace(rv.Body) != "" {
			r.revision.ReviewAuthor, r.revision.ReviewBody = rv.Author, rv.Body
			if len(r.kept) == 0 {
				j.p.Instructions = ""
			}
			return nil
		}
	}
	return nil
}

// coAuthors are the people the commit credits: the requester and whoever
// else a follow-up round answers.
func (j *job) coAuthors() []workspace.Identity {
	out := []workspace.Identity{userIdentity(j.p.Requester)}
	seen := map[string]bool{strings.ToLower(j.p.Requester.Login): true}
	if j.round != nil {
		for _, c := range j.round.kept {
			if !seen[strings.ToLower(c.Requester.Login)] {
				seen[strings.ToLower(c.Requester.Login)] = true
				out = append(out, userIdentity(c.Requester))
			}
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

// requesters are the logins a round answers, in order, without repeats.
func (j *job) requesters() []string {
	out := []string{j.p.Requester.Login}
	for _, c := range j.round.kept {
		if !containsFold(out, c.Requester.Login) {
			out = append(out, c.Requester.Login)
		}
	}
	return out
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// endRound completes the round's check run with the outcome and, for a
// stopped round, drops the commands kept for the next one (a stop means
// the bot should stop working on the pull request; the final comment names
// whose commands were dropped). commit is the commit the round pushed, if
// any.
func (j *job) endRound(ctx context.Context, outcome, commit string, res agent.Result) {
	r := j.round
	if r == nil {
		return
	}
	r.commit, r.changed = commit, changedFiles(res.Patch)
	j.endRoundCheck(ctx, outcome, commit, res)
	if outcome != outcomeCancelled {
		return
	}
	dropped, err := j.w.state.dropKept(ctx, j.taskID)
	if err != nil {
		j.log.Warn("drop the commands kept for the next round", logattr.Err, err)
	}
	for _, c := range dropped {
		if !containsFold(r.dropped, c.Requester.Login) {
			r.dropped = append(r.dropped, c.Requester.Login)
		}
	}
}

// changedFiles returns the paths a patch changes (both sides of a rename).
func changedFiles(patch string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(patch, "\n") {
		for _, prefix := range []string{"--- a/", "+++ b/"} {
			if p, ok := strings.CutPrefix(line, prefix); ok {
				out[strings.TrimSuffix(p, "\t")] = true
			}
		}
	}
	return out
}
