package webhook

import (
	"encoding/json"

	"github.com/agentfix/agentfix/jobs"
)

// IssueComment handles issue_comment: a command in a new comment on an
// issue or on a PR.
type IssueComment struct{ rules rules }

// issueCommentEvent is what routing reads of an issue_comment payload.
type issueCommentEvent struct {
	envelope
	Issue struct {
		Number int  `json:"number"`
		User   user `json:"user"`
		// PullRequest is present (an object) when the issue is a pull
		// request, as go-github's Issue.IsPullRequest checks.
		PullRequest *struct{} `json:"pull_request"`
	} `json:"issue"`
	Comment comment `json:"comment"`
}

func (h *IssueComment) decide(d delivery, body []byte) (decision, error) {
	var ev issueCommentEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return decision{}, err
	}
	return h.rules.routeComment(commentRequest{
		deliveryID:   d.id,
		action:       ev.Action,
		trigger:      "created",
		installation: ev.Installation.ID,
		repo:         toRepo(ev.Repository),
		number:       ev.Issue.Number,
		isPR:         ev.Issue.PullRequest != nil,
		prAuthor:     toUser(ev.Issue.User),
		sender:       toUser(ev.Sender),
		senderIsBot:  ev.Sender.isBot(),
		body:         ev.Comment.Body,
		source: jobs.Trigger{
			Kind:      jobs.TriggerIssueComment,
			CommentID: ev.Comment.ID,
			URL:       ev.Comment.HTMLURL,
		},
	})
}

var _ eventHandler = (*IssueComment)(nil)
