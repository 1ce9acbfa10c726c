package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/llm"
	"github.com/agentfix/agentfix/config"
)

// modelCheckTimeout bounds the startup check of the model provider.
const modelCheckTimeout = 30 * time.Second

// checker is a model that can prove its credentials (*llm.Model).
type checker interface {
	Check(ctx context.Context) error
}

// checkModel proves, at startup and before any paid call, that the model
// provider takes the configured key (AGENTFIX_CHECK_MODEL=false skips it).
// A refused key stops the command with the variable holding it, the base
// URL and the provider's status; a provider that cannot be reached is
// only a warning (the jobs retry it).
func checkModel(ctx context.Context, cfg *config.App, m agent.Model, log *slog.Logger) error {
	c, ok := m.(checker)
	if !cfg.CheckModel || !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, modelCheckTimeout)
	defer cancel()
	err := c.Check(ctx)
	var ae *llm.AuthError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return configError{fmt.Errorf("%s: %w (fix the key, or set AGENTFIX_CHECK_MODEL=false to start without this check)", ae.KeyVariable, err)}
	}
	log.Warn("the model provider could not be checked at startup; jobs will retry it", logErr(err))
	return nil
}
