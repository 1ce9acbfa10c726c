package webhook

import (
	"encoding/json"

	"github.com/agentfix/agentfix/jobs"
)

// PullRequestReview handles pull_request_review: a command in the body of a
// submitted review starts a revise round that sees the whole review.
type PullRequestReview struct{ rules rules }

// pullRequestReviewEvent is what routing reads of a pull_request_review
// payload.
type pullRequestReviewEvent struct {
	envelope
	PullRequest pullRequest `json:"pull_request"`
	Review      comment     `json:"review"`
}

// pullRequest is a payload's pull request: its number and author.
type pullRequest struct {
	Number int  `json:"number"`
	User   user `json:"user"`
}

func (h *PullRequestReview) decide(d delivery, body []byte) (decision, error) {
	var ev pullRequestReviewEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return decision{}, err
	}
	return h.rules.routeComment(commentRequest{
		deliveryID:   d.id,
		action:       ev.Action,
		trigger:      "submitted",
		installation: ev.Installation.ID,
		repo:         toRepo(ev.Repository),
		number:       ev.PullRequest.Number,
		isPR:         true,
		prAuthor:     toUser(ev.PullRequest.User),
		sender:       toUser(ev.Sender),
		senderIsBot:  ev.Sender.isBot(),
		body:         ev.Review.Body,
		source: jobs.Trigger{
			Kind:     jobs.TriggerReview,
			ReviewID: ev.Review.ID,
			URL:      ev.Review.HTMLURL,
		},
	})
}

var _ eventHandler = (*PullRequestReview)(nil)
