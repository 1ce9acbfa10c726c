package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/agent/llm"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/jobs/worker"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// sandboxKinds maps the names AGENTFIX_SANDBOX takes to the constructors of
// package workspace.
func sandboxKinds() map[string]func(workspace.Options) (tools.Sandbox, error) {
	return map[string]func(workspace.Options) (tools.Sandbox, error){
		"bwrap":  func(o workspace.Options) (tools.Sandbox, error) { return asSandbox(workspace.NewBwrap(o)) },
		"docker": func(o workspace.Options) (tools.Sandbox, error) { return asSandbox(workspace.NewDocker(o)) },
		"none":   func(o workspace.Options) (tools.Sandbox, error) { return asSandbox(workspace.NewNone(o)) },
	}
}

// asSandbox returns a constructor's result as a tools.Sandbox, nil on error
// (never a typed nil).
func asSandbox[S tools.Sandbox](s S, err error) (tools.Sandbox, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

// checkSandboxKind reports an unknown sandbox name, listing the valid ones,
// and the none sandbox without its opt-in, as configuration errors.
func checkSandboxKind(kind string, allowUnsandboxed bool) error {
	kinds := sandboxKinds()
	if _, ok := kinds[kind]; !ok {
		return configError{fmt.Errorf("sandbox %q: unknown; valid sandboxes: %s", kind, strings.Join(sortedKeys(kinds), ", "))}
	}
	if kind == "none" && !allowUnsandboxed {
		return configError{fmt.Errorf("AGENTFIX_ALLOW_UNSANDBOXED: the none sandbox runs the agent's commands on this machine without isolation; set AGENTFIX_ALLOW_UNSANDBOXED=true to allow it (development only)")}
	}
	return nil
}

// checkDocker checks, before any model call, that the docker sandbox can
// start containers of image: the daemon answers and the image is on this
// machine or is pulled (onPull is told first). imageVar names where the
// image came from (AGENTFIX_SANDBOX_IMAGE, --image) and sandboxVar where
// another sandbox is chosen; a failure is a configuration error naming
// them, with docker's answer.
func checkDocker(ctx context.Context, image, imageVar, sandboxVar string, onPull func(image string)) error {
	err := workspace.CheckDocker(ctx, workspace.DockerCheck{Image: image, OnPull: onPull})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, workspace.ErrDockerImage):
		return configError{fmt.Errorf("%s: %w; build or push it, log in to its registry (docker login), or name another image", imageVar, err)}
	}
	return configError{fmt.Errorf("%s %s: the docker sandbox cannot run it: %w; start Docker (or point DOCKER_HOST at it), or choose another sandbox with %s",
		imageVar, image, err, sandboxVar)}
}

// setupEgress returns AGENTFIX_SETUP_EGRESS as its list, checked.
func setupEgress(cfg *config.App) ([]string, error) {
	var out []string
	for _, e := range strings.Split(cfg.SetupEgress, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	if err := workspace.ValidateSetupEgress(out); err != nil {
		return nil, configError{fmt.Errorf("AGENTFIX_SETUP_EGRESS: %w", err)}
	}
	return out, nil
}

// newSandbox builds the sandbox named kind; an unknown name or a sandbox
// that cannot be built here (bwrap not installed, no image for docker) is a
// configuration error.
func newSandbox(kind string, o workspace.Options) (tools.Sandbox, error) {
	if err := checkSandboxKind(kind, o.AllowUnsandboxed); err != nil {
		return nil, err
	}
	sb, err := sandboxKinds()[kind](o)
	if err != nil {
		return nil, configError{fmt.Errorf("sandbox %s: %w", kind, err)}
	}
	return sb, nil
}

// newModel builds the model named "provider/model" with the configuration's
// credentials, price overrides and allow_unpriced_model. An unknown
// provider, an unpriced model and a missing API key are configuration
// errors.
func newModel(cfg *config.App, name string, log *slog.Logger, onError func(error)) (*llm.Model, error) {
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
		return nil, configError{err}
	}
	return m, nil
}

// modelPrice tells the worker's budgets the most one call of a model
// built by newModel can cost: its price per million tokens (input at the
// larger of the input and cache-write prices) and its reply limit where
// one is sent (OpenAI-compatible servers keep theirs, and the worker
// reserves its default allowance).
func modelPrice(m agent.Model) worker.ModelPrice {
	lm, ok := m.(*llm.Model)
	if !ok {
		return worker.ModelPrice{}
	}
	p := lm.Price()
	return worker.ModelPrice{InputPerM: max(p.Input, p.CacheWrite), OutputPerM: p.Output, MaxOutputTokens: lm.MaxOutputTokens()}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
