package webhook

import (
	"strings"

	"github.com/agentfix/agentfix/jobs"
	"github.com/google/go-github/v66/github"
)

// Issues handles the issues event: the trigger label starts a fix, and
// closing an issue cancels its job.
type Issues struct{ rules rules }

func (h *Issues) decide(d delivery, payload any) decision {
	ev := payload.(*github.IssuesEvent)
	installation := ev.GetInstallation().GetID()
	repo := toRepo(ev.GetRepo())
	number := ev.GetIssue().GetNumber()
	if installation == 0 {
		return ignored("no installation in the payload (not a GitHub App delivery)")
	}
	if repo.FullName == "" || number == 0 {
		return ignored("no repository or issue number in the payload")
	}
	switch ev.GetAction() {
	case "labeled":
		label := ev.GetLabel().GetName()
		switch {
		case !strings.EqualFold(label, h.rules.triggerLabel):
			return ignored("label %q is not the trigger label %q", label, h.rules.triggerLabel)
		case isBot(ev.GetSender()):
			return ignored("sender %s is a bot", ev.GetSender().GetLogin())
		case ev.GetIssue().GetState() == "closed":
			return ignored("issue is closed")
		}
		return decision{fix: &jobs.FixIssue{
			DeliveryID: d.id, Installation: installation, Repo: repo, Number: number,
			Trigger:   jobs.Trigger{Kind: jobs.TriggerLabel, URL: ev.GetIssue().GetHTMLURL()},
			Requester: toUser(ev.GetSender()),
		}}
	case "closed":
		return decision{cancel: &jobs.Cancel{
			DeliveryID: d.id, Installation: installation, Reason: jobs.CancelIssueClosed,
			Repos: []jobs.Repo{repo}, Number: number,
		}}
	}
	return ignored("issues action %s is not a trigger", ev.GetAction())
}

var _ eventHandler = (*Issues)(nil)
