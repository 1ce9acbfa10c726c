package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/workspace"
)

// Rounds in the pipeline world: the bot's pull requests with their heads
// in the bare repository, reviews and their inline threads, and the whole
// worker running (Run: both queues, as a deployment has them), fed by
// the tasks the webhook edge would enqueue for comments, reviews and
// inline comments on a pull request.

// start runs w until the test ends or stop is called (runWorker).
func (p *pipeWorld) start(w *Worker) (stop func()) {
	p.t.Helper()
	return runWorker(p.t, w)
}

// botBranch is the branch of the bot's pull request for the world's issue.
func (p *pipeWorld) botBranch() string { return fmt.Sprintf("agent-fix/issue-%d", p.issue) }

// botPR opens the bot's pull request for the world's issue with files
// committed on its branch by the bot, as an earlier fix job would have:
// a body starting with "Fixes #N". It returns its number.
func (p *pipeWorld) botPR(files map[string]string) int {
	p.t.Helper()
	p.git.commitAs(p.t, p.botBranch(), files, fmt.Sprintf("Fix #%d: Add subtracts", p.issue), pipeBot, pipeBotEmail)
	return p.gh.addPRBy(ghapp.PullRequest{Title: fmt.Sprintf("Fix #%d: Add subtracts", p.issue), Head: p.botBranch(), Author: pipeBot,
		Body: fmt.Sprintf("Fixes #%d\n\n## Summary\n\nFixed Add.", p.issue)})
}

// pipeBotEmail is the address the bot's commits carry.
const pipeBotEmail = "agentfix[bot]@users.noreply.github.com"

// prAuthor is the author of pull request number as a payload names it.
func (p *pipeWorld) prAuthor(number int) jobs.User {
	p.t.Helper()
	pr, ok := p.gh.pr(number)
	if !ok {
		p.t.Fatalf("no pull request #%d", number)
	}
	u := jobs.User{Login: pr.Author, Type: "User"}
	if strings.HasSuffix(pr.Author, "[bot]") {
		u.Type = "Bot"
	}
	return u
}

// prCommand is the webhook edge for a comment by sender carrying the
// command with instructions on pull request number: the revise task
// (the pull request is a bot's) and its notice, or the notice saying the
// bot revises only its own pull requests. It returns the delivery id.
func (p *pipeWorld) prCommand(number int, sender, instructions string) string {
	p.t.Helper()
	id := p.gh.addComment(number, sender, "/agent-fix "+instructions)
	return p.askRound(number, sender, instructions, jobs.Trigger{Kind: jobs.TriggerIssueComment, CommentID: id})
}

// prVerb is the webhook edge for a comment by sender on pull request
// number carrying the command's verb o (stop, resume, help): its notice.
// It returns the delivery id.
func (p *pipeWorld) prVerb(number int, sender string, o jobs.Outcome) string {
	p.t.Helper()
	verb := map[jobs.Outcome]string{jobs.OutcomeStop: jobs.VerbStop, jobs.OutcomeResume: jobs.VerbResume, jobs.OutcomeHelp: jobs.VerbHelp}[o]
	if verb == "" {
		p.t.Fatalf("outcome %q is not a verb's", o)
	}
	id := p.gh.addComment(number, sender, "/agent-fix "+verb)
	d := p.delivery()
	author := p.prAuthor(number)
	n := jobs.Notice{DeliveryID: d, Installation: hInstall, Repo: p.repo(), Number: number, IsPR: true,
		Trigger: jobs.Trigger{Kind: jobs.TriggerIssueComment, CommentID: id}, Requester: user(sender),
		Command: jobs.Command{Verb: verb}, Author: &author, Outcome: o}
	if err := p.queue.SubmitNotice(p.t.Context(), n); err != nil {
		p.t.Fatal(err)
	}
	return d
}

// review adds a review by author on pull request number with inline
// comments, and is the webhook edge for its submission carrying the
// command with instructions. It returns the review's id and its
// comments' ids.
func (p *pipeWorld) review(number int, author, body, instructions string, comments ...ghapp.ReviewComment) (int64, []int64) {
	p.t.Helper()
	id, ids := p.gh.addReview(number, author, body, comments...)
	p.askRound(number, author, instructions, jobs.Trigger{Kind: jobs.TriggerReview, ReviewID: id})
	return id, ids
}

// inlineComment adds one inline comment by author on path:line of pull
// request number (a review of its own, as GitHub makes it) and is the
// webhook edge for it carrying the command with instructions. It returns
// the comment's id.
func (p *pipeWorld) inlineComment(number int, author, instructions, path string, line int) int64 {
	p.t.Helper()
	review, ids := p.gh.addReview(number, author, "", ghapp.ReviewComment{Body: "/agent-fix " + instructions, Path: path, Line: line,
		DiffHunk: "@@ -3,3 +3,3 @@\n // Add returns a plus b.\n func Add(a, b int) int {\n-\treturn a - b\n+\treturn a + b"})
	p.askRound(number, author, instructions, jobs.Trigger{Kind: jobs.TriggerReviewComment, CommentID: ids[0], ReviewID: review})
	return ids[0]
}

// askRound is the webhook edge's decision for a command with
// instructions by sender on pull request number: a revise task and its
// notice when a bot opened it, else the notice alone.
func (p *pipeWorld) askRound(number int, sender, instructions string, trigger jobs.Trigger) string {
	p.t.Helper()
	d := p.delivery()
	author := p.prAuthor(number)
	if author.Type != "Bot" {
		n := jobs.Notice{DeliveryID: d, Installation: hInstall, Repo: p.repo(), Number: number, IsPR: true,
			Trigger: trigger, Requester: user(sender), Command: jobs.Command{Instructions: instructions},
			Author: &author, Outcome: jobs.OutcomeNotBotsPR}
		if err := p.queue.SubmitNotice(p.t.Context(), n); err != nil {
			p.t.Fatal(err)
		}
		return d
	}
	_, err := p.queue.SubmitRevise(p.t.Context(), jobs.RevisePR{DeliveryID: d, Installation: hInstall, Repo: p.repo(),
		Number: number, Trigger: trigger, Requester: user(sender), Instructions: instructions, Author: author})
	if err != nil {
		p.t.Fatal(err)
	}
	return d
}

// issueCommand is the webhook edge for a comment by sender carrying the
// command with instructions on the world's issue: the fix task and its
// notice. It returns the delivery id.
func (p *pipeWorld) issueCommand(sender, instructions string) string {
	p.t.Helper()
	id := p.gh.addComment(p.issue, sender, "/agent-fix "+instructions)
	fi := jobs.FixIssue{DeliveryID: p.delivery(), Installation: hInstall, Repo: p.repo(), Number: p.issue,
		Trigger: jobs.Trigger{Kind: jobs.TriggerIssueComment, CommentID: id}, Requester: user(sender), Instructions: instructions}
	if _, err := p.queue.SubmitFix(p.t.Context(), fi); err != nil {
		p.t.Fatal(err)
	}
	return fi.DeliveryID
}

// reviseState returns the state of pull request number's revise task (""
// when there is none).
func (p *pipeWorld) reviseState(number int) string {
	info, err := asynq.NewInspectorFromRedisClient(p.rdb).GetTaskInfo(jobs.QueueAgent, jobs.ReviseTaskID(hRepo, number))
	if err != nil {
		return ""
	}
	return info.State.String()
}

// interactiveDone waits until the interactive task id has ended (asynq
// keeps no finished interactive task).
func (p *pipeWorld) interactiveDone(what, id string) {
	p.t.Helper()
	insp := asynq.NewInspectorFromRedisClient(p.rdb)
	p.waitFor(what, func() bool {
		_, err := insp.GetTaskInfo(jobs.QueueInteractive, id)
		return errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound)
	})
}

// waitForComments waits until the bot has want comments on number
// containing s, and returns them.
func (p *pipeWorld) waitForComments(what string, number int, s string, want int) []ghapp.Comment {
	p.t.Helper()
	var got []ghapp.Comment
	p.waitFor(what, func() bool {
		got = p.gh.commentsWith(number, s)
		return len(got) >= want
	})
	if len(got) != want {
		p.t.Fatalf("%s: %d comments with %q, want %d: %+v", what, len(got), s, want, got)
	}
	return got
}

// ---- pull requests, reviews and threads on the pipeline world's GitHub ----

// addPRBy opens pull request pr (its number, state, base and URL set
// here) and returns its number.
func (g *pipeGitHub) addPRBy(pr ghapp.PullRequest) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.number++
	pr.Number, pr.State, pr.HTMLURL = g.number, "open", g.url(g.number)
	if pr.Base == "" {
		pr.Base = "main"
	}
	g.prs = append(g.prs, &pr)
	return pr.Number
}

// addReview adds a review by author on pull request number with inline
// comments (each the first of its thread) and returns the ids of the
// review and of its comments.
func (g *pipeGitHub) addReview(number int, author, body string, comments ...ghapp.ReviewComment) (int64, []int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.commentID++
	id := g.commentID
	g.reviews = append(g.reviews, pipeReview{number: number, Review: ghapp.Review{ID: id, Author: author, Body: body, State: "COMMENTED",
		HTMLURL: fmt.Sprintf("%s#pullrequestreview-%d", g.url(number), id)}})
	var ids []int64
	for _, c := range comments {
		g.commentID++
		c.ID, c.ReviewID, c.Author = g.commentID, id, author
		c.HTMLURL = fmt.Sprintf("%s#discussion_r%d", g.url(number), c.ID)
		g.reviewComments = append(g.reviewComments, pipeReviewComment{number: number, ReviewComment: c})
		ids = append(ids, c.ID)
	}
	return id, ids
}

// botReplies returns the bot's replies in inline threads of pull request
// number.
func (g *pipeGitHub) botReplies(number int) []ghapp.ReviewComment {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []ghapp.ReviewComment
	for _, c := range g.reviewComments {
		if c.number == number && c.Author == pipeBot {
			out = append(out, c.ReviewComment)
		}
	}
	return out
}

// pipeReview is a review of pull request number.
type pipeReview struct {
	ghapp.Review
	number int
}

// pipeReviewComment is an inline comment on pull request number.
type pipeReviewComment struct {
	ghapp.ReviewComment
	number int
}

// PR returns pull request number with the commits of its head and base
// branches in the world's repository and, while it is open, whether git
// merges them.
func (g *pipeGitHub) PR(ctx context.Context, _ ghapp.Repo, number int) (ghapp.PullRequest, error) {
	g.mu.Lock()
	failed, _ := g.fault("PR")
	i := slices.IndexFunc(g.prs, func(pr *ghapp.PullRequest) bool { return pr.Number == number })
	var pr ghapp.PullRequest
	if i >= 0 {
		pr = *g.prs[i]
	}
	g.mu.Unlock()
	switch {
	case failed != nil:
		return ghapp.PullRequest{}, failed
	case i < 0:
		return ghapp.PullRequest{}, fmt.Errorf("pull request %d: %w", number, ghapp.ErrNotFound)
	}
	pr = g.withHeads(pr)
	if pr.State == "open" && pr.HeadSHA != "" && pr.BaseSHA != "" {
		pr.Mergeable, pr.MergeableState = g.git.mergeability(ctx, pr.BaseSHA, pr.HeadSHA)
	}
	return pr, nil
}

// withHeads is pr as GitHub answers for it: from this repository, with
// the commits its head and base branches have in the world's repository.
func (g *pipeGitHub) withHeads(pr ghapp.PullRequest) ghapp.PullRequest {
	pr.HeadRepo = hRepo
	if g.git != nil {
		pr.HeadSHA, _ = g.git.branch(pr.Head)
		pr.BaseSHA, _ = g.git.branch(pr.Base)
	}
	return pr
}

func (g *pipeGitHub) ListReviews(_ context.Context, _ ghapp.Repo, number int) ([]ghapp.Review, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if failed, _ := g.fault("ListReviews"); failed != nil {
		return nil, failed
	}
	var out []ghapp.Review
	for _, r := range g.reviews {
		if r.number == number {
			out = append(out, r.Review)
		}
	}
	return out, nil
}

func (g *pipeGitHub) ListReviewComments(_ context.Context, _ ghapp.Repo, number int) ([]ghapp.ReviewComment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if failed, _ := g.fault("ListReviewComments"); failed != nil {
		return nil, failed
	}
	var out []ghapp.ReviewComment
	for _, c := range g.reviewComments {
		if c.number == number {
			out = append(out, c.ReviewComment)
		}
	}
	return out, nil
}

// ReplyToReviewComment answers in the thread of comment id, as GitHub
// does: the reply's InReplyTo is the thread's first comment.
func (g *pipeGitHub) ReplyToReviewComment(_ context.Context, _ ghapp.Repo, number int, id int64, body string) (ghapp.ReviewComment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	failed, after := g.fault("ReplyToReviewComment")
	if failed != nil {
		return ghapp.ReviewComment{}, failed
	}
	i := slices.IndexFunc(g.reviewComments, func(c pipeReviewComment) bool { return c.number == number && c.ID == id })
	if i < 0 {
		return ghapp.ReviewComment{}, apiError(http.MethodPost, fmt.Sprintf("/repos/%s/pulls/%d/comments/%d/replies", hRepo, number, id), http.StatusNotFound)
	}
	root := g.reviewComments[i]
	if root.InReplyTo != 0 {
		id = root.InReplyTo
	}
	g.commentID++
	c := ghapp.ReviewComment{ID: g.commentID, InReplyTo: id, Body: body, Author: pipeBot, Path: root.Path, Line: root.Line,
		HTMLURL: fmt.Sprintf("%s#discussion_r%d", g.url(number), g.commentID)}
	g.reviewComments = append(g.reviewComments, pipeReviewComment{number: number, ReviewComment: c})
	return c, after
}

func (g *pipeGitHub) ReactToReviewComment(_ context.Context, _ ghapp.Repo, id int64, content string) error {
	return g.react("ReactToReviewComment", fmt.Sprintf("%s on review comment %d", content, id))
}

// MarkReadyForReview takes pull request number out of draft.
func (g *pipeGitHub) MarkReadyForReview(_ context.Context, _ ghapp.Repo, number int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	failed, after := g.fault("MarkReadyForReview")
	if failed != nil {
		return failed
	}
	for _, pr := range g.prs {
		if pr.Number == number {
			pr.Draft = false
		}
	}
	return after
}

// IsTeamMember: no repository of the world names allowed teams.
func (g *pipeGitHub) IsTeamMember(context.Context, string, string, string) (bool, error) {
	return false, nil
}

// ---- commits of the world's repository ----

// pipeCommit is a commit of the bare repository.
type pipeCommit struct {
	SHA        string
	Parents    []string
	AuthorName string
	Message    string
}

// headCommit returns the commit of rev (a branch or a commit id).
func (c *bareCache) headCommit(t *testing.T, rev string) pipeCommit {
	t.Helper()
	out, err := gitIn(t.Context(), "--git-dir="+c.bare, "log", "-1", "--format=%H%n%P%n%an%n%B", rev, "--")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(out, "\n", 4)
	for len(lines) < 4 {
		lines = append(lines, "")
	}
	return pipeCommit{SHA: lines[0], Parents: strings.Fields(lines[1]), AuthorName: lines[2], Message: strings.TrimSpace(lines[3])}
}

// Diff is base...head of the bare repository, as workspace.Cache makes
// it: from their merge base, cut at the last whole line within maxBytes.
func (c *bareCache) Diff(ctx context.Context, _ string, base, head string, maxBytes int) (workspace.RangeDiff, error) {
	mb, err := gitIn(ctx, "--git-dir="+c.bare, "merge-base", base, head)
	if err != nil {
		return workspace.RangeDiff{}, err
	}
	patch, err := gitBytes(ctx, "--git-dir="+c.bare, "diff", "--find-renames", "--no-color",
		"--src-prefix=a/", "--dst-prefix=b/", mb, head, "--")
	if err != nil {
		return workspace.RangeDiff{}, err
	}
	d := workspace.RangeDiff{MergeBase: mb, Patch: string(patch)}
	if len(patch) > maxBytes {
		cut := patch[:maxBytes]
		if i := bytes.LastIndexByte(cut, '\n'); i >= 0 {
			cut = cut[:i+1]
		}
		d.Patch, d.Truncated = string(cut), true
	}
	return d, nil
}
