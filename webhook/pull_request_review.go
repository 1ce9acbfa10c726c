package webhook

import (
	"github.com/agentfix/agentfix/jobs"
	"github.com/google/go-github/v66/github"
)

// PullRequestReview handles pull_request_review: a command in the body of a
// submitted review starts a revise round that sees the whole review.
type PullRequestReview struct{ rules rules }

func (h *PullRequestReview) decide(d delivery, payload any) decision {
	ev := payload.(*github.PullRequestReviewEvent)
	return h.rules.routeComment(commentRequest{
		deliveryID:   d.id,
		action:       ev.GetAction(),
		trigger:      "submitted",
		installation: ev.GetInstallation().GetID(),
		repo:         toRepo(ev.GetRepo()),
		number:       ev.GetPullRequest().GetNumber(),
		isPR:         true,
		prAuthor:     toUser(ev.GetPullRequest().GetUser()),
		sender:       toUser(ev.GetSender()),
		senderIsBot:  isBot(ev.GetSender()),
		body:         ev.GetReview().GetBody(),
		source: jobs.Trigger{
			Kind:     jobs.TriggerReview,
			ReviewID: ev.GetReview().GetID(),
			URL:      ev.GetReview().GetHTMLURL(),
		},
	})
}

var _ eventHandler = (*PullRequestReview)(nil)
