package worker

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
)

// maxRoundDiff bounds, in bytes, the pull request diff a round's task
// shows the agent; a longer one is cut with a note saying how to see the
// rest in the working copy.
const maxRoundDiff = 200 << 10

// round is one revise round on a pull request the bot opened, asked for by
// a comment, a review or an inline review comment on it (or by a trigger
// on the issue, moved here by its fix job), or a follow-up round answering
// the commands kept while the previous round ran. Its steps: resume; admit
// the requester, the pull request and the repository's settings; post the
// round's status comment on the pull request; then the shared pipeline
// with the round's own start (the pull request's head, its check run and
// review context), delivery (a commit on the pull request, never a force
// push; a completed draft marked ready) and final word (a reply on the pull
// request and in every inline thread of the reviews that asked for it).
// When the round ended for good, commands kept meanwhile start one
// follow-up round (followup.go).
type round struct {
	w *Worker
	j job

	pr      ghapp.PullRequest
	author  jobs.User // the pull request's author as the payload named it
	trigger jobs.Trigger

	revision *agent.Revision // nil when the agent does not run (a retry publishing a saved result)
	threads  []thread        // inline threads of the reviews that asked for the round
	bot      string          // the App's bot login

	commit  string          // the commit the round pushed
	changed map[string]bool // the files it changed
	dropped []string        // who had commands kept that a stop dropped
	ready   readiness       // whether it marked the pull request ready for review
}

// handleRevise runs a revise task (DESIGN.md §4).
func (w *Worker) handleRevise(ctx context.Context, t *asynq.Task) error {
	p, err := jobs.Decode[jobs.RevisePR](t.Payload())
	var repo ghapp.Repo
	if err == nil {
		repo, err = ghapp.ParseRepo(p.Repo.FullName)
	}
	if err == nil && p.Number <= 0 {
		err = fmt.Errorf("pull request number %d is not positive", p.Number)
	}
	var gh GitHub
	if err == nil {
		gh, err = w.opts.GitHub.Installation(p.Installation)
	}
	if err != nil {
		w.log.Error("revise task that cannot run", logattr.Err, err)
		w.metrics.job(jobs.TypeRevise, outcome.Invalid)
		return skip(fmt.Errorf("revise task: %w", err))
	}
	taskID := jobs.ReviseTaskID(p.Repo.FullName, p.Number)
	r := &round{w: w, author: p.Author, trigger: p.Trigger, j: job{
		kind: jobs.TypeRevise, taskID: taskID, key: store.JobKey(taskID, p.DeliveryID), delivery: p.DeliveryID,
		install: p.Installation, repo: repo, clone: p.Repo, requester: p.Requester, trigger: p.Trigger,
		instructions: roundInstructions(p), kept: p.FollowUps, thread: p.Number, onPR: true, gh: gh, started: w.now(),
		log: w.log.With(logattr.Task, taskID, logattr.DeliveryID, p.DeliveryID, logattr.Repo, p.Repo.FullName,
			logattr.PR, p.Number, logattr.InstallationID, p.Installation),
	}}
	err = w.runJob(ctx, r)
	if err == nil || errors.Is(err, asynq.SkipRetry) || lastAttempt(ctx) {
		w.roundEnded(ctx, &r.j, r.author)
	}
	return err
}

func (r *round) job() *job { return &r.j }

// run checks the round can run — the requester may write, the pull request
// is the bot's own, open, and names its issue, the repository's settings
// let the requester in and its budgets are not used up — posts the round's
// status comment on the pull request, and does the work.
func (r *round) run(ctx context.Context) (outcome.Outcome, error) {
	w, j := r.w, &r.j
	if o, err := w.resume(ctx, j); o != "" {
		return o, err
	}
	if err := w.store.RoundStarted(ctx, j.taskID); err != nil {
		return outcome.Error, err
	}
	if ok, err := w.gate.permitted(ctx, j.gh, j.repo, j.thread, true, j.requester.Login, j.delivery); err != nil {
		return outcome.Error, err
	} else if !ok {
		return outcome.Unauthorized, fmt.Errorf("%s has no write access", j.requester.Login)
	}
	if o, err := r.readPR(ctx); o != "" {
		return o, err
	}
	if o, err := w.settle(ctx, j); o != "" {
		return o, err
	}
	if err := w.statuses.open(ctx, j); err != nil {
		return outcome.Error, err
	}
	j.show(ctx, func(d *report.Status) { d.Phase, d.Branch = report.PhaseCloning, j.branch })
	return w.work(ctx, r)
}

// readPR reads the pull request and its issue into the round. A pull
// request someone else opened, a closed one, or one whose issue cannot be
// told gets one reply and ends the round (a non-empty outcome).
func (r *round) readPR(ctx context.Context) (outcome.Outcome, error) {
	w, j := r.w, &r.j
	pr, err := j.gh.PR(ctx, j.repo, j.thread)
	if errors.Is(err, ghapp.ErrNotFound) {
		return outcome.Invalid, err
	}
	if err != nil {
		return outcome.Error, err
	}
	mine, err := w.isBotPR(ctx, pr)
	if err != nil {
		return outcome.Error, err
	}
	d := w.replies.data(j.requester.Login, j.delivery)
	switch {
	case !mine:
		if err := w.replies.post(ctx, j.gh, j.repo, j.thread, report.ReplyNotMyPR, d); err != nil {
			return outcome.Error, err
		}
		return outcome.NotBotsPR, fmt.Errorf("pull request #%d is by %s, not this App", pr.Number, pr.Author)
	case pr.State != "open":
		d.Merged = pr.Merged
		if err := w.replies.post(ctx, j.gh, j.repo, j.thread, report.ReplyPRClosed, d); err != nil {
			return outcome.Error, err
		}
		return outcome.Closed, fmt.Errorf("pull request #%d is %s (merged %v)", pr.Number, pr.State, pr.Merged)
	case pr.HeadRepo != "" && !strings.EqualFold(pr.HeadRepo, j.repo.String()):
		return outcome.Invalid, fmt.Errorf("pull request #%d comes from %s, not %s", pr.Number, pr.HeadRepo, j.repo)
	}
	n := issueOf(pr)
	if n > 0 {
		j.issue, err = j.gh.Issue(ctx, j.repo, n)
		if errors.Is(err, ghapp.ErrNotFound) {
			n = 0
		} else if err != nil {
			return outcome.Error, err
		}
	}
	if n == 0 || j.issue.IsPullRequest {
		if err := w.replies.post(ctx, j.gh, j.repo, j.thread, report.ReplyNoIssue, d); err != nil {
			return outcome.Error, err
		}
		return outcome.NoIssue, fmt.Errorf("pull request #%d names no issue it fixes", pr.Number)
	}
	j.number, j.branch, r.pr = n, pr.Head, pr
	j.log = j.log.With(logattr.Issue, n)
	return "", nil
}

// base: a round starts from the pull request's head.
func (r *round) base(f fetched) (string, error) { return f.branchHead(&r.j, r.j.branch) }

// start puts the round's check run, in progress, on the head commit the
// round starts from, finds the inline threads it will answer and, when the
// agent is about to run, builds its review context: the pull request's
// diff from the cache, the triggering review's body, and the review
// comments of people with write access.
func (r *round) start(ctx context.Context, f fetched, base string, agentRuns bool) error {
	w, j := r.w, &r.j
	w.checks.start(ctx, j, base, fmt.Sprintf("Revising #%d", r.pr.Number), agent.Result{})
	comments, err := w.reviewComments(ctx, j, r.pr.Number)
	if err != nil {
		return err
	}
	r.bot, r.threads = comments.bot, threadsOf(comments.all, r.reviewIDs(), comments.bot)
	if !agentRuns {
		return nil
	}
	patch, err := w.prDiff(ctx, j, f, r.pr, base)
	if err != nil {
		return err
	}
	r.revision = &agent.Revision{PR: r.pr.Number, Diff: patch, Comments: comments.forAgent}
	if r.trigger.Kind == jobs.TriggerReview && r.trigger.ReviewID != 0 {
		if err := r.addReviewBody(ctx); err != nil {
			return err
		}
	}
	j.log.Info(fmt.Sprintf("round context: diff of %d bytes, %d review comments, %d left out, %d threads to answer",
		len(patch), len(comments.forAgent), comments.leftOut, len(r.threads)))
	return nil
}

// prDiff returns the diff of pull request pr, whose head is head, against
// its base branch, from the cache: cut at maxRoundDiff with a note saying
// how to see the rest in the working copy.
func (w *Worker) prDiff(ctx context.Context, j *job, f fetched, pr ghapp.PullRequest, head string) (string, error) {
	prBase := f.branches[pr.Base]
	if prBase == "" {
		return "", fmt.Errorf("base branch %s of pull request #%d is not on the git server", pr.Base, pr.Number)
	}
	diff, err := w.opts.Cache.Diff(ctx, j.repo.String(), prBase, head, maxRoundDiff)
	if err != nil {
		return "", err
	}
	patch := diff.Patch
	if diff.Truncated {
		patch += fmt.Sprintf("\n… (the diff is cut here: it is longer than %d KiB; run `git diff %s HEAD` in /workspace for the rest)\n",
			maxRoundDiff>>10, diff.MergeBase)
	}
	return patch, nil
}

// addReviewBody puts the triggering review's whole body into the task. For
// a round of that review alone, its body replaces the command's
// instructions, which are part of it.
func (r *round) addReviewBody(ctx context.Context) error {
	j := &r.j
	reviews, err := j.gh.ListReviews(ctx, j.repo, r.pr.Number)
	if err != nil {
		return err
	}
	for _, rv := range reviews {
		if rv.ID == r.trigger.ReviewID && strings.TrimSpace(rv.Body) != "" {
			r.revision.ReviewAuthor, r.revision.ReviewBody = rv.Author, rv.Body
			if len(j.kept) == 0 {
				j.instructions = ""
			}
			return nil
		}
	}
	return nil
}

func (r *round) task() agent.Task {
	j := &r.j
	return agent.Task{Repo: j.repo.String(), Issue: j.number, Title: j.issue.Title, Body: j.issue.Body,
		Instructions: j.instructions, Notes: j.cfg.Repo.Instructions, Revision: r.revision}
}

// forcePush: a round adds a commit; when someone pushed meanwhile, the
// push is refused and the round says to ask again.
func (r *round) forcePush() bool { return false }

// deliver: the commit is on the pull request already; a round that
// completed a draft marks it ready for review.
func (r *round) deliver(ctx context.Context, _ fetched, commit string) (delivered, error) {
	j := &r.j
	d := delivered{outcome: outcome.PRUpdated, pr: r.pr.Number, url: r.pr.HTMLURL}
	if j.saved.Result.Status == agent.Autosubmitted {
		d.draft, d.detail = true, report.IncompleteDetail(j.saved.Result)
	}
	r.ready = r.w.markReady(ctx, j, r.pr, commit)
	return d, nil
}

// ended completes the round's check runs, notes what it pushed and, for a
// stopped round, drops the commands kept for the next one (a stop means
// the bot should stop working on the pull request; the reply names whose
// commands were dropped).
func (r *round) ended(ctx context.Context, o outcome.Outcome, pushed string, res agent.Result) {
	j := &r.j
	r.commit, r.changed = pushed, changedFiles(res.Patch)
	r.w.checks.finish(ctx, j, o, pushed, res)
	if o != outcome.Cancelled {
		return
	}
	dropped, err := r.w.store.DropKept(ctx, j.taskID)
	if err != nil {
		j.log.Warn("drop the commands kept for the next round", logattr.Err, err)
	}
	for _, c := range dropped {
		if !containsFold(r.dropped, c.Requester.Login) {
			r.dropped = append(r.dropped, c.Requester.Login)
		}
	}
}

// final posts the round's reply on the pull request — the agent's summary
// (neutralized) and what happened, mentioning everyone the round answers —
// then answers every inline thread of the reviews that asked for the
// round, unless the round was stopped.
func (r *round) final(ctx context.Context, d report.Final, o outcome.Outcome) error {
	w, j := r.w, &r.j
	d = w.finalData(j, d)
	d.Marker = ghapp.Marker("final " + j.key)
	body, err := w.texts.RoundFinal(report.RoundFinal{Final: d, Requesters: r.requesters(), Commit: report.ShortSHA(r.commit),
		Dropped: r.dropped, MarkedReady: r.ready.Marked, NotReady: r.ready.Failure})
	if err != nil {
		return err
	}
	c, err := report.PostOnce(ctx, j.gh, j.repo, j.thread, d.Marker, body)
	if err != nil {
		return err
	}
	if o != outcome.Cancelled {
		r.replyInThreads(ctx, d, c.HTMLURL)
	}
	return nil
}

// failed reports the round's last failed attempt.
func (r *round) failed(ctx context.Context, cause error) outcome.Outcome {
	n, _ := asynq.GetRetryCount(ctx)
	return r.w.giveUp(ctx, r, cause, n+1)
}

var _ stage = (*round)(nil)

// requesters are the logins a round answers, in order, without repeats.
func (r *round) requesters() []string {
	out := []string{r.j.requester.Login}
	for _, c := range r.j.kept {
		if !containsFold(out, c.Requester.Login) {
			out = append(out, c.Requester.Login)
		}
	}
	return out
}

// reviewIDs are the reviews whose inline threads the round answers: the
// triggering one's and those of the kept commands.
func (r *round) reviewIDs() map[int64]bool {
	ids := map[int64]bool{}
	if r.trigger.ReviewID != 0 {
		ids[r.trigger.ReviewID] = true
	}
	for _, c := range r.j.kept {
		if c.Trigger.ReviewID != 0 {
			ids[c.Trigger.ReviewID] = true
		}
	}
	return ids
}

// isBotPR reports whether this App's bot opened pr.
func (w *Worker) isBotPR(ctx context.Context, pr ghapp.PullRequest) (bool, error) {
	id, err := w.opts.GitHub.Identity(ctx)
	if err != nil {
		return false, fmt.Errorf("the App's identity: %w", err)
	}
	return strings.EqualFold(pr.Author, id.BotLogin), nil
}

var (
	fixesRe       = regexp.MustCompile(`(?im)^\s*(?:fix|fixes|fixed|close|closes|closed|resolve|resolves|resolved)\s+#([0-9]+)\b`)
	issueBranchRe = regexp.MustCompile(`issue-([0-9]+)$`)
)

// issueOf returns the issue a bot pull request fixes: the "Fixes #N" line
// of its body, else the number its branch ends with; 0 when neither says.
func issueOf(pr ghapp.PullRequest) int {
	for _, m := range [][]string{fixesRe.FindStringSubmatch(pr.Body), issueBranchRe.FindStringSubmatch(pr.Head)} {
		if m == nil {
			continue
		}
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// roundInstructions is what the people who asked for the round said: the
// command's instructions, or for a follow-up round every kept command in
// turn, attributed.
func roundInstructions(p jobs.RevisePR) string {
	if len(p.FollowUps) == 0 {
		return p.Instructions
	}
	var b strings.Builder
	b.WriteString("These requests came while the previous round ran. Address all of them.")
	for i, c := range p.FollowUps {
		text := strings.TrimSpace(c.Instructions)
		if text == "" {
			text = "(no instructions: address the review comments below)"
		}
		fmt.Fprintf(&b, "\n\nRequest %d of %d, by @%s %s:\n%s", i+1, len(p.FollowUps), c.Requester.Login, report.TriggerWords(c.Trigger.Kind), text)
	}
	return b.String()
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

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
