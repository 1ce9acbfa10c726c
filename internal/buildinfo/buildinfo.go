// Package buildinfo says which build of the bot is running.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Version is the line `bot version` prints: the version and revision a
// release build stamped (go build -ldflags "-X main.version=v1.2.3 -X
// main.revision=<sha>"), or, when version is empty, the module version
// and VCS revision of the build information; then the Go version.
func Version(version, revision string) string {
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
