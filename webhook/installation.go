package webhook

import (
	"encoding/json"

	"github.com/agentfix/agentfix/jobs"
)

// Installation handles installation: when the App is uninstalled or
// suspended, the worker cancels the installation's jobs and drops its
// cached clients. Installation events arrive without subscribing.
type Installation struct{}

// installationEvent is what routing reads of an installation payload.
type installationEvent struct {
	Action       string          `json:"action"`
	Installation installationRef `json:"installation"`
}

func (h *Installation) decide(d delivery, body []byte) (decision, error) {
	var ev installationEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return decision{}, err
	}
	id := ev.Installation.ID
	if id == 0 {
		return ignored("no installation in the payload"), nil
	}
	var reason jobs.CancelReason
	switch ev.Action {
	case "deleted":
		reason = jobs.CancelInstallationDeleted
	case "suspend":
		reason = jobs.CancelInstallationSuspended
	default:
		return ignored("installation action %s needs nothing", ev.Action), nil
	}
	if err := checkInstallation(id); err != nil {
		return decision{}, err
	}
	return decision{cancel: &jobs.Cancel{DeliveryID: d.id, Installation: id, Reason: reason}}, nil
}

var _ eventHandler = (*Installation)(nil)
