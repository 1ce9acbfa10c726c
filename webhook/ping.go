package webhook

import (
	"encoding/json"
)

// Ping handles ping, which GitHub sends when a webhook is set up; the
// answer tells the operator the signature and the route work.
type Ping struct{}

// pingEvent is what the answer reads of a ping payload.
type pingEvent struct {
	HookID int64 `json:"hook_id"`
}

func (h *Ping) decide(_ delivery, body []byte) (decision, error) {
	var ev pingEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return decision{}, err
	}
	return ignored("pong (hook %d)", ev.HookID), nil
}

var _ eventHandler = (*Ping)(nil)
