package rootfs

import (
	"fmt"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Platform is an OCI platform: operating system, architecture and an
// optional variant ("linux", "arm64", "v8").
type Platform struct {
	OS, Architecture, Variant string
}

// HostPlatform is the platform this process runs on (linux/amd64,
// linux/arm64, …), the one chosen from an index by default.
func HostPlatform() Platform {
	return Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
}

// ParsePlatform parses "os/arch" or "os/arch/variant".
func ParsePlatform(s string) (Platform, error) {
	f := strings.Split(s, "/")
	if len(f) < 2 || len(f) > 3 || f[0] == "" || f[1] == "" {
		return Platform{}, fmt.Errorf("platform %q: want os/arch or os/arch/variant", s)
	}
	p := Platform{OS: f[0], Architecture: f[1]}
	if len(f) == 3 {
		p.Variant = f[2]
	}
	return p, nil
}

// String returns "os/arch" or "os/arch/variant".
func (p Platform) String() string {
	if p.Variant == "" {
		return p.OS + "/" + p.Architecture
	}
	return p.OS + "/" + p.Architecture + "/" + p.Variant
}

// baselineVariants are the variants an architecture's plain name means:
// an index may say arm64/v8 for what the host calls arm64.
var baselineVariants = map[string]string{"arm64": "v8", "amd64": "v1", "arm": "v7"}

// matches reports whether an index entry for have runs on p. An empty
// variant in p accepts none or the architecture's baseline; a variant in
// p must be there exactly.
func (p Platform) matches(have *v1.Platform) bool {
	if have == nil || have.OS != p.OS || have.Architecture != p.Architecture {
		return false
	}
	if p.Variant != "" {
		return have.Variant == p.Variant
	}
	return have.Variant == "" || have.Variant == baselineVariants[p.Architecture]
}

// choose picks the manifest for p from an index's entries: the first that
// matches, skipping attestations and other non-image entries.
func choose(entries []v1.Descriptor, p Platform) (v1.Descriptor, error) {
	var offered []string
	for _, d := range entries {
		if !d.MediaType.IsImage() && !d.MediaType.IsIndex() {
			continue
		}
		if p.matches(d.Platform) {
			return d, nil
		}
		if d.Platform != nil && d.Platform.OS != "unknown" {
			offered = append(offered, Platform{OS: d.Platform.OS, Architecture: d.Platform.Architecture, Variant: d.Platform.Variant}.String())
		}
	}
	if len(offered) == 0 {
		return v1.Descriptor{}, fmt.Errorf("the index has no image for %s", p)
	}
	return v1.Descriptor{}, fmt.Errorf("the index has no image for %s; it offers %s", p, strings.Join(offered, ", "))
}
