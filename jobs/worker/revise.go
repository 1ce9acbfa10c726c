package worker

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
)

// Outcomes of revise rounds and follow-up tasks besides the shared ones.
const (
	outcomeNotBotsPR = "not_bots_pr"
	outcomeNoIssue   = "no_issue"
	outcomeMoved     = "moved"
	outcomeKept      = "kept"
	outcomeNothing   = "nothing_kept"
	outcomeStarted   = "follow_up_started"
)

// handleRevise runs a revise task (DESIGN.md §4): one round on a pull
// request the bot opened, asked for by a comment, a review or an inline
// review comment on it (or by a trigger on the issue, moved here by its fix
// job), or a follow-up round answering the commands kept while the
// previous round ran. The round works on the pull request's branch and
// adds a commit (never a force push), replies on the pull request with the
// agent's summary and in every inline thread of the reviews that asked for
// it, and keeps a check run on the pull request's head. When the round has
// ended for good, commands kept meanwhile start one follow-up round.
func (w *Worker) handleRevise(ctx context.Context, t *asynq.Task) error {
	p, err := jobs.Decode[jobs.RevisePR](t.Payload())
	if err != nil {
		w.log.Error("revise task with a bad payload", logattr.Err, err)
		w.metrics.job(jobs.TypeRevise, outcomeInvalid)
		return skip(err)
	}
	repo, err := ghapp.ParseRepo(p.Repo.FullName)
	if err != nil {
		w.metrics.job(jobs.TypeRevise, outcomeInvalid)
		return skip(fmt.Errorf("revise task: %w", err))
	}
	taskID := jobs.ReviseTaskID(p.Repo.FullName, p.Number)
	log := w.log.With(logattr.Task, taskID, logattr.DeliveryID, p.DeliveryID, logattr.Repo, p.Repo.FullName,
		logattr.PR, p.Number, logattr.InstallationID, p.Installation)
	gh, err := w.opts.GitHub.Installation(p.Installation)
	if err != nil {
		w.metrics.job(jobs.TypeRevise, outcomeInvalid)
		return skip(fmt.Errorf("revise task: %w", err))
	}
	j := &job{
		w: w, kind: jobs.TypeRevise, taskID: taskID, key: jobKey(taskID, p.DeliveryID), repo: repo, gh: gh, log: log,
		started: w.now(), thread: p.Number,
		p: jobs.FixIssue{
			V: p.V, DeliveryID: p.DeliveryID, Installation: p.Installation, Repo: p.Repo,
			Trigger: p.Trigger, Requester: p.Requester, Instructions: roundInstructions(p),
		},
		round: &round{author: p.Author, trigger: p.Trigger, kept: p.FollowUps},
	}
	_, err = w.runJob(ctx, j, j.runRevise)
	if err == nil || errors.Is(err, asynq.SkipRetry) || lastAttempt(ctx) {
		w.roundEnded(ctx, j)
	}
	return err
}

// runRevise checks the round can run — the requester may write, the pull
// request is the bot's own, open, and names its issue, the repository's
// settings let the requester in and its budgets are not used up — posts
// the round's status comment on the pull request, and runs the job.
func (j *job) runRevise(ctx context.Context) (string, error) {
	w := j.w
	if m, ok, err := w.state.cancelFor(ctx, j.taskID, j.p.DeliveryID); err != nil {
		return outcomeError, err
	} else if ok {
		return outcomeCancelled, skip(fmt.Errorf("round was stopped (%s)", m.Reason))
	}
	saved, haveSaved, err := w.state.loadResult(ctx, j.key)
	if err != nil {
		return outcomeError, err
	}
	if haveSaved && saved.Done != nil {
		return saved.Done.Outcome, nil // reported by an earlier attempt
	}
	if err := w.state.roundStarted(ctx, j.taskID); err != nil {
		return outcomeError, err
	}
	perm, err := j.gh.Permission(ctx, j.repo, j.p.Requester.Login)
	if err != nil {
		return outcomeError, err
	}
	if !perm.CanWrite() {
		if err := w.refuse(ctx, j.gh, j.repo, j.thread, true, j.p.Requester.Login, j.p.DeliveryID); err != nil {
			return outcomeError, err
		}
		return outcomeUnauthorized, skip(fmt.Errorf("%s has %s permission, not write", j.p.Requester.Login, perm))
	}
	if outcome, err := j.checkPR(ctx); err != nil || outcome != "" {
		return outcome, err
	}
	if outcome, stop, err := j.applyRepo(ctx, haveSaved, j.thread, true); stop {
		return outcome, err
	}
	ref, err := w.ensureStatus(ctx, j.gh, j.repo, j.thread, j.key, j.p.Requester.Login)
	if err != nil {
		return outcomeError, err
	}
	j.status = w.newStatusComment(j.gh, j.repo, ref, j.key, j.p.Requester.Login, j.log)
	_ = j.status.show(ctx, func(d *statusData) { d.Phase, d.Branch = PhaseCloning, j.branch }, true)
	return j.work(ctx, saved, haveSaved)
}

// checkPR reads the pull request and its issue into the job. A pull
// request someone else opened, a closed one, or one whose issue cannot be
// told gets one reply and ends the round (a non-empty outcome).
func (j *job) checkPR(ctx context.Context) (string, error) {
	pr, err := j.gh.PR(ctx, j.repo, j.thread)
	if errors.Is(err, ghapp.ErrNotFound) {
		return outcomeInvalid, skip(err)
	}
	if err != nil {
		return outcomeError, err
	}
	mine, err := j.w.isBotPR(ctx, pr)
	if err != nil {
		return outcomeError, err
	}
	d := j.w.replyData(j.p.Requester.Login, j.p.DeliveryID)
	switch {
	case !mine:
		if err := j.w.reply(ctx, j.gh, j.repo, j.thread, tmplNotMyPR, d); err != nil {
			return outcomeError, err
		}
		return outcomeNotBotsPR, skip(fmt.Errorf("pull request #%d is by %s, not this App", pr.Number, pr.Author))
	case pr.State != "open":
		d.Merged = pr.Merged
		if err := j.w.reply(ctx, j.gh, j.repo, j.thread, tmplPRClosed, d); err != nil {
			return outcomeError, err
		}
		return outcomeClosed, skip(fmt.Errorf("pull request #%d is %s (merged %v)", pr.Number, pr.State, pr.Merged))
	case pr.HeadRepo != "" && !strings.EqualFold(pr.HeadRepo, j.repo.String()):
		return outcomeInvalid, skip(fmt.Errorf("pull request #%d comes from %s, not %s", pr.Number, pr.HeadRepo, j.repo))
	}
	n := issueOf(pr)
	if n > 0 {
		j.issue, err = j.gh.Issue(ctx, j.repo, n)
		if errors.Is(err, ghapp.ErrNotFound) {
			n = 0
		} else if err != nil {
			return outcomeError, err
		}
	}
	if n == 0 || j.issue.IsPullRequest {
		if err := j.w.reply(ctx, j.gh, j.repo, j.thread, tmplNoIssue, d); err != nil {
			return outcomeError, err
		}
		return outcomeNoIssue, skip(fmt.Errorf("pull request #%d names no issue it fixes", pr.Number))
	}
	j.p.Number, j.branch, j.round.pr = n, pr.Head, pr
	j.log = j.log.With(logattr.Issue, n)
	return "", nil
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
		fmt.Fprintf(&b, "\n\nRequest %d of %d, by @%s %s:\n%s", i+1, len(p.FollowUps), c.Requester.Login, triggerWords(c.Trigger.Kind), text)
	}
	return b.String()
}

// triggerWords says in words where a command was written.
func triggerWords(k jobs.TriggerKind) string {
	switch k {
	case jobs.TriggerReview:
		return "in a review"
	case jobs.TriggerReviewComment:
		return "in an inline review comment"
	case jobs.TriggerLabel:
		return "by labelling the issue"
	}
	return "in a comment"
}

// isRoundKey reports whether job key is a revise round's, whose comments
// are on the pull request.
func isRoundKey(key string) bool { return strings.HasPrefix(key, jobs.TypeRevise+":") }
