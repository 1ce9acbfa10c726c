package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/workspace"
)

// TestWorkerSandboxImage runs a command through the worker's sandbox
// factory with AGENTFIX_SANDBOX=docker against a docker CLI stand-in that
// records its arguments: the container runs the configured image, without
// network.
func TestWorkerSandboxImage(t *testing.T) {
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
	sb, err := workerSandbox(cfg, nil, nil)(workspace.Options{Workspace: ws, Cache: cache})
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
