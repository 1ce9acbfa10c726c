package webhook

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/agentfix/agentfix/jobs"
)

// Issues handles the issues event: the trigger label starts a fix, and
// closing an issue cancels its job.
type Issues struct{ rules rules }

// issuesEvent is what routing reads of an issues payload.
type issuesEvent struct {
	envelope
	Issue struct {
		Number  int    `json:"number"`
		State   string `json:"state"`
		HTMLURL string `json:"html_url"`
	} `json:"issue"`
	Label struct {
		Name string `json:"name"`
	} `json:"label"`
}

func (h *Issues) decide(d delivery, body []byte) (decision, error) {
	var ev issuesEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return decision{}, err
	}
	installation := ev.Installation.ID
	repo := toRepo(ev.Repository)
	number := ev.Issue.Number
	if installation == 0 {
		return ignored("no installation in the payload (not a GitHub App delivery)"), nil
	}
	switch ev.Action {
	case "labeled":
		label := ev.Label.Name
		switch {
		case !strings.EqualFold(label, h.rules.triggerLabel):
			return ignored("label %q is not the trigger label %q", label, h.rules.triggerLabel), nil
		case ev.Sender.isBot():
			return ignored("sender %s is a bot", ev.Sender.Login), nil
		case ev.Issue.State == "closed":
			return ignored("issue is closed"), nil
		}
		requester := toUser(ev.Sender)
		if err := errors.Join(checkInstallation(installation), checkTarget(repo, number), checkSender(requester)); err != nil {
			return decision{}, err
		}
		return decision{fix: &jobs.FixIssue{
			DeliveryID: d.id, Installation: installation, Repo: repo, Number: number,
			Trigger:   jobs.Trigger{Kind: jobs.TriggerLabel, URL: ev.Issue.HTMLURL},
			Requester: requester,
		}}, nil
	case "closed":
		if err := errors.Join(checkInstallation(installation), checkTarget(repo, number)); err != nil {
			return decision{}, err
		}
		return decision{cancel: &jobs.Cancel{
			DeliveryID: d.id, Installation: installation, Reason: jobs.CancelIssueClosed,
			Repos: []jobs.Repo{repo}, Number: number,
		}}, nil
	}
	return ignored("issues action %s is not a trigger", ev.Action), nil
}

var _ eventHandler = (*Issues)(nil)
