package webhook

import (
	"github.com/agentfix/agentfix/jobs"
	"github.com/google/go-github/v66/github"
)

// PullRequestReviewComment handles pull_request_review_comment: a command
// in a new inline comment on a PR.
type PullRequestReviewComment struct{ rules rules }

func (h *PullRequestReviewComment) decide(d delivery, payload any) decision {
	ev := payload.(*github.PullRequestReviewCommentEvent)
	return h.rules.routeComment(commentRequest{
		deliveryID:   d.id,
		action:       ev.GetAction(),
		trigger:      "created",
		installation: ev.GetInstallation().GetID(),
		repo:         toRepo(ev.GetRepo()),
		number:       ev.GetPullRequest().GetNumber(),
		isPR:         true,
		prAuthor:     toUser(ev.GetPullRequest().GetUser()),
		sender:       toUser(ev.GetSender()),
		senderIsBot:  isBot(ev.GetSender()),
		body:         ev.GetComment().GetBody(),
		source: jobs.Trigger{
			Kind:      jobs.TriggerReviewComment,
			CommentID: ev.GetComment().GetID(),
			ReviewID:  ev.GetComment().GetPullRequestReviewID(),
			URL:       ev.GetComment().GetHTMLURL(),
		},
	})
}

var _ eventHandler = (*PullRequestReviewComment)(nil)
