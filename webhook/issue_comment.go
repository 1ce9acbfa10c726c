package webhook

import (
	"github.com/agentfix/agentfix/jobs"
	"github.com/google/go-github/v66/github"
)

// IssueComment handles issue_comment: a command in a new comment on an
// issue or on a PR.
type IssueComment struct{ rules rules }

func (h *IssueComment) decide(d delivery, payload any) decision {
	ev := payload.(*github.IssueCommentEvent)
	issue := ev.GetIssue()
	return h.rules.routeComment(commentRequest{
		deliveryID:   d.id,
		action:       ev.GetAction(),
		trigger:      "created",
		installation: ev.GetInstallation().GetID(),
		repo:         toRepo(ev.GetRepo()),
		number:       issue.GetNumber(),
		isPR:         issue.IsPullRequest(),
		prAuthor:     toUser(issue.GetUser()),
		sender:       toUser(ev.GetSender()),
		senderIsBot:  isBot(ev.GetSender()),
		body:         ev.GetComment().GetBody(),
		source: jobs.Trigger{
			Kind:      jobs.TriggerIssueComment,
			CommentID: ev.GetComment().GetID(),
			URL:       ev.GetComment().GetHTMLURL(),
		},
	})
}

var _ eventHandler = (*IssueComment)(nil)
