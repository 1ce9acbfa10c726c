package worker

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs/worker/report"
)

// Bounds of the review comments a round's task holds.
const (
	// maxRoundComments is how many review comments (the newest) the agent
	// sees.
	maxRoundComments = 100
	// maxHunkLines is how many lines of a comment's diff hunk (its end,
	// where the commented line is) the agent sees.
	maxHunkLines = 30
)

// roundComments are the pull request's inline review comments as a round
// uses them.
type roundComments struct {
	bot string
	all []ghapp.ReviewComment
	// forAgent are the comments the agent sees: not the bot's own, only by
	// people with write access, the newest maxRoundComments.
	forAgent []agent.ReviewComment
	// leftOut counts comments by people without write access and those
	// over the cap.
	leftOut int
}

// reviewComments lists the pull request's inline review comments and keeps
// for the agent those of people with write access — one permission call
// per distinct author — leaving out the bot's own replies. Review comments
// are untrusted text like the issue: the agent's prompt fences them.
func (w *Worker) reviewComments(ctx context.Context, j *job, pr int) (roundComments, error) {
	id, err := w.opts.GitHub.Identity(ctx)
	if err != nil {
		return roundComments{}, err
	}
	all, err := j.gh.ListReviewComments(ctx, j.repo, pr)
	if err != nil {
		return roundComments{}, err
	}
	rc := roundComments{bot: id.BotLogin, all: all}
	writers := map[string]bool{}
	for _, c := range all {
		if strings.EqualFold(c.Author, id.BotLogin) {
			continue
		}
		login := strings.ToLower(c.Author)
		ok, known := writers[login]
		if !known {
			perm, err := j.gh.Permission(ctx, j.repo, c.Author)
			if err != nil {
				return roundComments{}, err
			}
			ok = perm.CanWrite()
			writers[login] = ok
		}
		if !ok {
			rc.leftOut++
			continue
		}
		rc.forAgent = append(rc.forAgent, agent.ReviewComment{
			Author: c.Author, Path: c.Path, Line: c.Line, DiffHunk: hunkTail(c.DiffHunk), Body: c.Body,
		})
	}
	if over := len(rc.forAgent) - maxRoundComments; over > 0 {
		rc.forAgent, rc.leftOut = rc.forAgent[over:], rc.leftOut+over
	}
	return rc, nil
}

// hunkTail keeps the last maxHunkLines lines of a diff hunk, with its
// header line.
func hunkTail(h string) string {
	lines := strings.Split(h, "\n")
	if len(lines) <= maxHunkLines+1 {
		return h
	}
	return lines[0] + "\n" + strings.Join(lines[len(lines)-maxHunkLines:], "\n")
}

// threadsOf returns the inline threads that comments of the reviews in ids
// start or continue, in order, each once; the bot's own comments start
// none.
func threadsOf(all []ghapp.ReviewComment, ids map[int64]bool, bot string) []thread {
	var out []thread
	seen := map[int64]bool{}
	for _, c := range all {
		if !ids[c.ReviewID] || strings.EqualFold(c.Author, bot) {
			continue
		}
		root := c.ID
		if c.InReplyTo != 0 {
			root = c.InReplyTo
		}
		if !seen[root] {
			seen[root] = true
			out = append(out, thread{root: root, path: c.Path, author: c.Author})
		}
	}
	return out
}

// thread is an inline review thread the round answers.
type thread struct {
	root         int64 // the thread's first comment
	path, author string
}

// replyInThreads answers each inline thread of the round once, saying
// what the round did about it: the commit and whether it changes the
// commented file, or why there is no commit. A thread an earlier attempt
// answered (its marker is there) is skipped; a failed reply is logged, not
// retried, as the round's reply on the pull request says it all.
func (r *round) replyInThreads(ctx context.Context, d report.Final, link string) {
	j := &r.j
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
		body, err := r.w.texts.ThreadReply(report.ThreadReply{
			Marker: marker, Outcome: d.Outcome, Commit: report.ShortSHA(r.commit), Path: th.path,
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
