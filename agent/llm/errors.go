package llm

import (
	"fmt"
	"net/http"

	"github.com/agentfix/agentfix/agent"
)

// AuthError is a provider's refusal of the credentials (401 or 403): the
// bot's operator must fix the key or its permissions, and no retry helps.
// Query and Check return it, never retried and logged at ERROR; it wraps
// agent.ErrModelAuth, so a run it ends has exit status agent.ModelAuth.
type AuthError struct {
	// Provider is "openai" or "anthropic".
	Provider string
	// BaseURL is the API the request went to.
	BaseURL string
	// Status is the HTTP status, 401 or 403.
	Status int
	// KeyVariable names the setting holding the key: OPENAI_API_KEY or
	// ANTHROPIC_API_KEY.
	KeyVariable string
	// Message is the provider's explanation, if it gave one.
	Message string
}

func (e *AuthError) Error() string {
	msg := fmt.Sprintf("%s refused the key in %s: %d %s from %s", e.Provider, e.KeyVariable, e.Status, http.StatusText(e.Status), e.BaseURL)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Unwrap returns agent.ErrModelAuth.
func (e *AuthError) Unwrap() error { return agent.ErrModelAuth }
