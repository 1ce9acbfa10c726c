package worker

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
)

// Templates of revise rounds.
const (
	tmplRoundFinal  = "round_final.md.tmpl"
	tmplThreadReply = "thread_reply.md.tmpl"
	tmplKept        = "kept.md.tmpl"
	tmplPRClosed    = "pr_closed.md.tmpl"
	tmplNoIssue     = "no_issue.md.tmpl"
)

// roundFinalData is the data of a round's reply on the pull request.
type roundFinalData struct {
	finalData
	// Requesters are everyone the round answers.
	Requesters []string
	// Commit is the pushed commit (short), empty when nothing was pushed.
	Commit string
	// Dropped are who had commands kept for the next round that a stop
	// dropped.
	Dropped []string
	// MarkedReady is set when the round marked the pull request ready for
	// review; NotReady says why it could not.
	MarkedReady bool
	NotReady    string
}

// threadReplyData is the data of a reply in an inline review thread.
type threadReplyData struct {
	Marker  string
	Outcome string
	Commit  string
	Path    string
	// Changed is set when Commit changes Path.
	Changed bool
	Detail  string
	// Link is the round's reply on the pull request.
	Link string
}

// roundFinal posts the round's reply on the pull request — the agent's
// summary (neutralized) and what happened, mentioning everyone the round
// answers — then answers every inline thread of the reviews that asked for
// the round, unless the round was stopped.
func (j *job) roundFinal(ctx context.Context, d finalData) error {
	r := j.round
	data := roundFinalData{finalData: d, Requesters: j.requesters(), Commit: shortSHA(r.commit), Dropped: r.dropped,
		MarkedReady: r.ready.Marked, NotReady: r.ready.Failure}
	body, err := j.w.texts.render(tmplRoundFinal, data)
	if err != nil {
		return err
	}
	c, err := postOnceComment(ctx, j.gh, j.repo, j.thread, d.Marker, body)
	if err != nil {
		return err
	}
	if d.Outcome != outcomeCancelled {
		j.replyInThreads(ctx, d, c.HTMLURL)
	}
	return nil
}

// postOnceComment posts body on issue or pull request number unless a
// comment of the bot with marker is there, and returns the comment.
func postOnceComment(ctx context.Context, gh GitHub, repo ghapp.Repo, number int, marker, body string) (ghapp.Comment, error) {
	if c, found, err := gh.FindComment(ctx, repo, number, marker); err != nil || found {
		return c, err
	}
	return gh.CreateComment(ctx, repo, number, body)
}

// replyInThreads answers each inline thread of the round once, saying
// what the round did about it: the commit and whether it changes the
// commented file, or why there is no commit. A thread an earlier attempt
// answered (its marker is there) is skipped; a failed reply is logged, not
// retried, as the round's reply on the pull request says it all.
func (j *job) replyInThreads(ctx context.Context, d finalData, link string) {
	r := j.round
	if len(r.threads) == 0 {
		return
	}
	existing, err := j.gh.ListReviewComments(ctx, j.repo, r.pr.Number)
	if err != nil {
		j.log.Warn("list review comments before answering threads", logattr.Err, err)
		return
	}
	answered := 0
	for _, th := range r.threads {
		marker := ghapp.Marker(fmt.Sprintf("thread %s %d", j.key, th.root))
		if hasMarker(existing, r.bot, marker) {
			answered++
			continue
		}
		body, err := j.w.texts.render(tmplThreadReply, threadReplyData{
			Marker: marker, Outcome: d.Outcome, Commit: shortSHA(r.commit), Path: th.path,
			Changed: r.changed[th.path], Detail: d.Detail, Link: link,
		})
		if err == nil {
			_, err = j.gh.ReplyToReviewComment(ctx, j.repo, r.pr.Number, th.root, body)
		}
		if err != nil {
			j.log.Warn("answer a review thread", logattr.Err, err)
			continue
		}
		answered++
	}
	j.log.Info(fmt.Sprintf("answered %d of %d review threads", answered, len(r.threads)))
}

// hasMarker reports whether a comment of bot in cs carries marker.
func hasMarker(cs []ghapp.ReviewComment, bot, marker string) bool {
	for _, c := range cs {
		if strings.EqualFold(c.Author, bot) && strings.Contains(c.Body, marker) {
			return true
		}
	}
	return false
}
