package main

import (
	"context"
	"fmt"
	"runtime/debug"
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
// go build -ldflags "-X main.version=v1.2.3 -X main.revision=<sha>". When
// empty, the module version and VCS revision from the build information
// are shown instead.
var version, revision string

func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "bot (no build information)"
	}
	if version != "" {
		s := "bot " + version
		if revision != "" {
			s += fmt.Sprintf(" (%.12s)", revision)
		}
		return s + " " + info.GoVersion
	}
	s := "bot " + info.Main.Version
	var rev, modified string
	for _, kv := range info.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.modified":
			if kv.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if rev != "" {
		s += fmt.Sprintf(" (%.12s%s)", rev, modified)
	}
	return s + " " + info.GoVersion
}
