package main

import (
	"context"
	"fmt"

	"github.com/agentfix/agentfix/internal/buildinfo"
)

// runVersion prints the module version, the VCS revision and the Go
// version the binary was built with.
func (m *Main) runVersion(_ context.Context, args []string) error {
	if err := parse(m.flagSet("version", nil), args); err != nil {
		return err
	}
	fmt.Fprintln(m.Stdout, versionString())
	return nil
}

// version and revision are stamped by release builds (the Dockerfile):
// go build -ldflags "-X main.version=v1.2.3 -X main.revision=<sha>".
var version, revision string

func versionString() string { return buildinfo.Version(version, revision) }
