package sandbox

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/session"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// Kinds maps the names AGENTFIX_SANDBOX takes to the constructors of
// package workspace.
func Kinds() map[string]func(workspace.Options) (tools.Sandbox, error) {
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

// CheckKind reports an unknown sandbox name, listing the valid ones, and
// the none sandbox without its opt-in.
func CheckKind(kind string, allowUnsandboxed bool) error {
	kinds := Kinds()
	if _, ok := kinds[kind]; !ok {
		names := make([]string, 0, len(kinds))
		for k := range kinds {
			names = append(names, k)
		}
		sort.Strings(names)
		return config.Error{Err: fmt.Errorf("sandbox %q: unknown; valid sandboxes: %s", kind, strings.Join(names, ", "))}
	}
	if kind == "none" && !allowUnsandboxed {
		return config.Error{Err: fmt.Errorf("AGENTFIX_ALLOW_UNSANDBOXED: the none sandbox runs the agent's commands on this machine without isolation; set AGENTFIX_ALLOW_UNSANDBOXED=true to allow it (development only)")}
	}
	return nil
}

// New builds the sandbox named kind; an unknown name or a sandbox that
// cannot be built here (bwrap not installed, no image for docker) is a
// configuration error.
func New(kind string, o workspace.Options) (tools.Sandbox, error) {
	if err := CheckKind(kind, o.AllowUnsandboxed); err != nil {
		return nil, err
	}
	sb, err := Kinds()[kind](o)
	if err != nil {
		return nil, config.Error{Err: fmt.Errorf("sandbox %s: %w", kind, err)}
	}
	return sb, nil
}

// ForWorker returns the worker's sandbox factory: the sandbox named by
// AGENTFIX_SANDBOX with the operator's opt-in, setup egress and cgroups,
// and the image of AGENTFIX_SANDBOX_IMAGE where a run names none.
func ForWorker(cfg *config.App, egress []string, cgroups *workspace.Cgroups) session.SandboxFactory {
	return func(o workspace.Options) (tools.Sandbox, error) {
		o.AllowUnsandboxed, o.SetupEgress, o.Cgroups = cfg.AllowUnsandboxed, egress, cgroups
		if o.DockerImage == "" {
			o.DockerImage = cfg.SandboxImage // the run names no image (the startup probe)
		}
		return New(cfg.Sandbox, o)
	}
}
