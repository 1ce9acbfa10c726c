package webhook

import (
	"encoding/json"

	"github.com/agentfix/agentfix/jobs"
)

// PullRequestReviewComment handles pull_request_review_comment: a command
// in a new inline comment on a PR.
type PullRequestReviewComment struct{ rules rules }

// pullRequestReviewCommentEvent is what routing reads of a
// pull_request_review_comment payload.
type pullRequestReviewCommentEvent struct {
	envelope
	PullRequest pullRequest `json:"pull_request"`
	Comment     comment     `json:"comment"`
}

func (h *PullRequestReviewComment) decide(d delivery, body []byte) (decision, error) {
	var ev pullRequestReviewCommentEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return decision{}, err
	}
	return h.rules.routeComment(commentRequest{
		deliveryID:   d.id,
		action:       ev.Action,
		trigger:      "created",
		installation: ev.Installation.ID,
		repo:         toRepo(ev.Repository),
		number:       ev.PullRequest.Number,
		isPR:         true,
		prAuthor:     toUser(ev.PullRequest.User),
		sender:       toUser(ev.Sender),
		senderIsBot:  ev.Sender.isBot(),
		body:         ev.Comment.Body,
		source: jobs.Trigger{
			Kind:      jobs.TriggerReviewComment,
			CommentID: ev.Comment.ID,
			ReviewID:  ev.Comment.PullRequestReviewID,
			URL:       ev.Comment.HTMLURL,
		},
	})
}

var _ eventHandler = (*PullRequestReviewComment)(nil)
