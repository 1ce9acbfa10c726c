package webhook

import (
	"github.com/google/go-github/v66/github"
)

// Ping handles ping, which GitHub sends when a webhook is set up; the
// answer tells the operator the signature and the route work.
type Ping struct{}

func (h *Ping) decide(_ delivery, payload any) decision {
	ev := payload.(*github.PingEvent)
	return ignored("pong (hook %d)", ev.GetHookID())
}

var _ eventHandler = (*Ping)(nil)
