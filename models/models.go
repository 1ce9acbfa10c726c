// Package models builds the model a configuration names (AGENTFIX_MODEL,
// a repository's model:, bot fix --model) with agent/llm, from the
// operator's keys, base URLs and price overrides, and proves at startup
// that the provider takes the key. Every error that stops a command is a
// config.Error naming the variable to change.
package models

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/llm"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/internal/logattr"
)

// New builds the model named "provider/model" with the configuration's
// credentials, price overrides and allow_unpriced_model; onError, when
// set, is told of every failed provider call. An unknown provider, an
// unpriced model and a missing API key are configuration errors.
func New(cfg *config.App, name string, log *slog.Logger, onError func(error)) (*llm.Model, error) {
	provider, _, _ := strings.Cut(name, "/")
	o := map[string]llm.Options{ // an unknown provider gets none; llm.New names the known ones
		"openai":    {APIKey: cfg.OpenAIAPIKey, BaseURL: cfg.OpenAIBaseURL},
		"anthropic": {APIKey: cfg.AnthropicAPIKey, BaseURL: cfg.AnthropicBaseURL},
	}[provider]
	o.AllowUnpriced = cfg.AllowUnpricedModel
	o.Logger = log
	o.OnError = onError
	// The configuration already read the environment and .env: the
	// provider must not read the process environment behind it.
	o.Getenv = func(string) string { return "" }
	if len(cfg.Prices) > 0 {
		o.Prices = make(map[string]llm.Price, len(cfg.Prices))
		for k, p := range cfg.Prices {
			o.Prices[k] = llm.Price{Input: p.Input, Output: p.Output, CacheRead: p.CacheRead, CacheWrite: p.CacheWrite}
		}
	}
	m, err := llm.New(name, o)
	if err != nil {
		return nil, config.Error{Err: err}
	}
	return m, nil
}

// checkTimeout bounds the startup check of the model provider.
const checkTimeout = 30 * time.Second

// checker is a model that can prove its credentials (*llm.Model).
type checker interface {
	Check(ctx context.Context) error
}

// Check proves, at startup and before any paid call, that the model
// provider takes the configured key (AGENTFIX_CHECK_MODEL=false skips it).
// A refused key is a configuration error naming the variable holding it,
// with the base URL and the provider's status; a provider that cannot be
// reached is only a warning (the jobs retry it).
func Check(ctx context.Context, cfg *config.App, m agent.Model, log *slog.Logger) error {
	c, ok := m.(checker)
	if !cfg.CheckModel || !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	err := c.Check(ctx)
	var ae *llm.AuthError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return config.Error{Err: fmt.Errorf("%s: %w (fix the key, or set AGENTFIX_CHECK_MODEL=false to start without this check)", ae.KeyVariable, err)}
	}
	log.Warn("the model provider could not be checked at startup; jobs will retry it", logattr.Err, err)
	return nil
}

// Counted returns a factory of the models New builds whose failed provider
// calls, retried or not, are counted by provider in
// agentfix_model_errors_total, registered on reg.
func Counted(cfg *config.App, log *slog.Logger, reg prometheus.Registerer) (func(name string) (agent.Model, error), error) {
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentfix_model_errors_total",
		Help: "Failed model provider calls, retried or not, by provider.",
	}, []string{"provider"})
	if err := reg.Register(errs); err != nil {
		return nil, fmt.Errorf("register model metrics: %w", err)
	}
	return func(name string) (agent.Model, error) {
		provider, _, _ := strings.Cut(name, "/")
		m, err := New(cfg, name, log, func(error) { errs.WithLabelValues(provider).Inc() })
		if err != nil {
			return nil, err
		}
		return m, nil
	}, nil
}
