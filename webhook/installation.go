package webhook

import (
	"github.com/agentfix/agentfix/jobs"
	"github.com/google/go-github/v66/github"
)

// Installation handles installation: when the App is uninstalled or
// suspended, the worker cancels the installation's jobs and drops its
// cached clients. Installation events arrive without subscribing.
type Installation struct{}

func (h *Installation) decide(d delivery, payload any) decision {
	ev := payload.(*github.InstallationEvent)
	id := ev.GetInstallation().GetID()
	if id == 0 {
		return ignored("no installation in the payload")
	}
	var reason jobs.CancelReason
	switch ev.GetAction() {
	case "deleted":
		reason = jobs.CancelInstallationDeleted
	case "suspend":
		reason = jobs.CancelInstallationSuspended
	default:
		return ignored("installation action %s needs nothing", ev.GetAction())
	}
	return decision{cancel: &jobs.Cancel{DeliveryID: d.id, Installation: id, Reason: reason}}
}

var _ eventHandler = (*Installation)(nil)
