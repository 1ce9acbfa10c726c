package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/workspace"
)

// TestForWorkerImage runs a command through the worker's sandbox
// factory with AGENTFIX_SANDBOX=docker against a docker CLI stand-in that
// records its arguments: the container runs the configured image, without
// network.
func TestForWorkerImage(t *testing.T) {
	bin := t.TempDir()
	argsFile := filepath.Join(t.TempDir(), "args")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > " + argsFile + "\necho ran\n"
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cfg := config.Defaults()
	cfg.Sandbox, cfg.SandboxImage = "docker", "ghcr.io/example/toolchain:1"
	ws, cache := t.TempDir(), t.TempDir()
	sb, err := ForWorker(cfg, nil, nil)(workspace.Options{Workspace: ws, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Run(context.Background(), workspace.Command{Script: "make test"})
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Output, "ran") {
		t.Fatalf("Run = %+v, %v; want the stand-in's output", res, err)
	}
	raw, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimSpace(string(raw)), "\n")
	tail := strings.Join(args[len(args)-4:], " ")
	if want := "ghcr.io/example/toolchain:1 bash -c make test"; tail != want {
		t.Errorf("docker run ends with %q, want %q", tail, want)
	}
	if !strings.Contains(string(raw), "--network=none\n") {
		t.Errorf("docker arguments lack --network=none:\n%s", raw)
	}
}

// TestCheckKind: an unknown name lists the valid ones, and the none
// sandbox needs its opt-in; both are configuration errors.
func TestCheckKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind             string
		allowUnsandboxed bool
		want             string // "" for no error
	}{
		{"bwrap", false, ""},
		{"docker", false, ""},
		{"none", true, ""},
		{"none", false, "AGENTFIX_ALLOW_UNSANDBOXED: the none sandbox runs the agent's commands on this machine without isolation"},
		{"podman", true, `sandbox "podman": unknown; valid sandboxes: bwrap, docker, none`},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			err := CheckKind(tc.kind, tc.allowUnsandboxed)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("CheckKind(%q, %v) = %v, want nil", tc.kind, tc.allowUnsandboxed, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("CheckKind(%q, %v) = %v, want %q", tc.kind, tc.allowUnsandboxed, err, tc.want)
			case err != nil && !errors.As(err, new(config.Error)):
				t.Errorf("CheckKind(%q) = %T, want a config.Error", tc.kind, err)
			}
		})
	}
}
