package deploy_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const sandboxDockerfile = "sandbox.Dockerfile"

// globalArgs returns the ARGs before the first FROM, each default with
// the ARGs before it expanded.
func globalArgs(t *testing.T, df dockerfile) map[string]string {
	t.Helper()
	args := map[string]string{}
	for _, a := range df.globalArgs {
		k, v, ok := strings.Cut(a.args, "=")
		if !ok {
			t.Errorf("line %d: ARG %s has no default", a.line, a.args)
			continue
		}
		args[k] = expandArgs(v, args)
	}
	return args
}

var argRef = regexp.MustCompile(`\$\{(\w+)\}`)

func expandArgs(s string, args map[string]string) string {
	return argRef.ReplaceAllStringFunc(s, func(m string) string { return args[m[2:len(m)-1]] })
}

// exactVersion is a tag with a full version: 1.26.8, 24.21.0-bookworm-slim.
var exactVersion = regexp.MustCompile(`:\d+\.\d+\.\d+(-[a-z0-9.-]+)?(@sha256:[0-9a-f]{64})?$`)

// TestSandboxImagesPinned checks that every image the sandbox image is
// made of is named at an exact version; the Debian base is the bookworm
// release, whose packages apt verifies.
func TestSandboxImagesPinned(t *testing.T) {
	df := parseDockerfile(t, sandboxDockerfile)
	args := globalArgs(t, df)
	if want := goDirective(t); args["GO_VERSION"] != want {
		t.Errorf("ARG GO_VERSION=%s, want go.mod's go %s", args["GO_VERSION"], want)
	}
	stages := map[string]bool{}
	for _, st := range df.stages {
		base := expandArgs(st.base, args)
		switch {
		case stages[base]:
		case base == "debian:bookworm-slim":
		case !exactVersion.MatchString(base):
			t.Errorf("stage %s: FROM %s: want an exact version", st.name, base)
		}
		stages[st.name] = true
	}
	if last := df.stages[len(df.stages)-1]; last.base != "debian:bookworm-slim" {
		t.Errorf("the image is FROM %s, want debian:bookworm-slim (bookworm, like the worker)", last.base)
	}
}

// commands splits a RUN into its shell commands.
func commands(run string) []string {
	var out []string
	for _, c := range regexp.MustCompile(`&&|\|\||;|\|`).Split(run, -1) {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// TestSandboxDownloadsVerified checks that nothing is fetched unverified:
// a curl or wget must be checked by sha256sum -c in the same RUN, an ADD
// of a URL needs --checksum, and every corepack install names the sha512
// of the package manager's tarball.
func TestSandboxDownloadsVerified(t *testing.T) {
	df := parseDockerfile(t, sandboxDockerfile)
	pinned := regexp.MustCompile(`^(pnpm|yarn)@\d+\.\d+\.\d+\+sha512\.[0-9a-f]{128}$`)
	installs := map[string]bool{}
	for _, st := range df.stages {
		for _, in := range st.all("ADD") {
			if strings.Contains(in.args, "://") && !slices.ContainsFunc(in.flags, func(f string) bool { return strings.HasPrefix(f, "--checksum=sha256:") }) {
				t.Errorf("line %d: ADD of a URL without --checksum", in.line)
			}
		}
		for _, in := range st.all("RUN") {
			cmds := commands(in.args)
			for _, c := range cmds {
				f := strings.Fields(c)
				switch f[0] {
				case "curl", "wget":
					if !slices.ContainsFunc(cmds, func(c string) bool {
						return strings.HasPrefix(c, "sha256sum -c") || strings.HasPrefix(c, "sha512sum -c")
					}) {
						t.Errorf("line %d: %s without a checksum check: %s", in.line, f[0], c)
					}
				case "corepack":
					if len(f) > 1 && (f[1] == "install" || f[1] == "prepare") {
						for _, spec := range f[2:] {
							if strings.HasPrefix(spec, "-") {
								continue
							}
							if !pinned.MatchString(spec) {
								t.Errorf("line %d: corepack %s %s: want NAME@X.Y.Z+sha512.HEX", in.line, f[1], spec)
							}
							installs[strings.SplitN(spec, "@", 2)[0]] = true
						}
					}
				}
			}
		}
	}
	for _, pm := range []string{"pnpm", "yarn"} {
		if !installs[pm] {
			t.Errorf("no pinned corepack install of %s", pm)
		}
	}
}

// TestSandboxTools checks that every tool the image promises comes from
// somewhere (a Debian package or a copied toolchain), is on PATH, and is
// run by the build's last check, so a build without it fails.
func TestSandboxTools(t *testing.T) {
	df := parseDockerfile(t, sandboxDockerfile)
	img := df.stages[len(df.stages)-1]
	var packages []string
	for _, in := range img.all("RUN") {
		if _, after, ok := strings.Cut(in.args, "apt-get install"); ok {
			for _, f := range strings.Fields(after) {
				if f == "&&" {
					break
				}
				if !strings.HasPrefix(f, "-") {
					packages = append(packages, f)
				}
			}
			for _, want := range []string{"--no-install-recommends", "rm -rf /var/lib/apt/lists/*"} {
				if !strings.Contains(in.args, want) {
					t.Errorf("line %d: apt-get install without %q", in.line, want)
				}
			}
		}
	}
	copies := map[string]string{} // destination → stage
	for _, in := range img.all("COPY") {
		var from string
		for _, f := range in.flags {
			if v, ok := strings.CutPrefix(f, "--from="); ok {
				from = v
			}
		}
		f := strings.Fields(in.args)
		for _, src := range f[:len(f)-1] {
			copies[src] = from
		}
	}
	env := dockerfileEnv(t, img)
	path := strings.Split(env["PATH"], ":")
	var check string
	if runs := img.all("RUN"); len(runs) > 0 {
		check = runs[len(runs)-1].args
	}
	tests := []struct {
		tool    string
		pkg     string // a Debian package, or
		copied  string // a path copied from a stage
		from    string
		pathDir string // the directory on PATH
		version string // how the last RUN checks it
	}{
		{tool: "go", copied: "/usr/local/go", from: "go", pathDir: "/usr/local/go/bin", version: "go version"},
		{tool: "node", copied: "/usr/local/bin/node", from: "node", pathDir: "/usr/local/bin", version: "node --version"},
		{tool: "npm", copied: "/usr/local/lib/node_modules", from: "node", pathDir: "/usr/local/bin", version: "npm --version"},
		{tool: "pnpm", copied: "/usr/local/lib/node_modules", from: "node", pathDir: "/usr/local/bin", version: "pnpm --version"},
		{tool: "yarn", copied: "/usr/local/lib/node_modules", from: "node", pathDir: "/usr/local/bin", version: "yarn --version"},
		{tool: "python3", pkg: "python3", pathDir: "/usr/bin", version: "python3 --version"},
		{tool: "pip", pkg: "python3-pip", pathDir: "/usr/bin", version: "pip --version"},
		{tool: "venv", pkg: "python3-venv"},
		{tool: "uv", copied: "/uv", from: "uv", pathDir: "/usr/local/bin", version: "uv --version"},
		{tool: "java", pkg: "openjdk-17-jdk-headless", pathDir: "/usr/bin", version: "java -version"},
		{tool: "mvn", pkg: "maven", pathDir: "/usr/bin", version: "mvn --version"},
		{tool: "gradle", copied: "/opt/gradle", from: "gradle", pathDir: "/opt/gradle/bin", version: "gradle --version"},
		{tool: "rustc", copied: "/usr/local/rustup", from: "rust", pathDir: "/usr/local/cargo/bin", version: "rustc --version"},
		{tool: "cargo", copied: "/usr/local/cargo", from: "rust", pathDir: "/usr/local/cargo/bin", version: "cargo --version"},
		{tool: "gcc", pkg: "build-essential", pathDir: "/usr/bin", version: "gcc --version"},
		{tool: "make", pkg: "build-essential", pathDir: "/usr/bin", version: "make --version"},
		{tool: "git", pkg: "git", pathDir: "/usr/bin", version: "git --version"},
		{tool: "rg", pkg: "ripgrep", pathDir: "/usr/bin", version: "rg --version"},
	}
	for _, tc := range tests {
		if tc.pkg != "" && !slices.Contains(packages, tc.pkg) {
			t.Errorf("%s: Debian package %s not installed", tc.tool, tc.pkg)
		}
		if tc.copied != "" && copies[tc.copied] != tc.from {
			t.Errorf("%s: %s copied from %q, want from the %s stage", tc.tool, tc.copied, copies[tc.copied], tc.from)
		}
		if tc.pathDir != "" && !slices.Contains(path, tc.pathDir) {
			t.Errorf("%s: %s not on PATH %s", tc.tool, tc.pathDir, env["PATH"])
		}
		if tc.version != "" && !slices.Contains(commands(check), tc.version) {
			t.Errorf("%s: the last RUN does not run %q", tc.tool, tc.version)
		}
	}

	user := lastArgs(t, img, "USER")
	uid, err := strconv.Atoi(strings.SplitN(user, ":", 2)[0])
	if err != nil || uid == 0 {
		t.Errorf("USER %s: want a fixed non-root uid", user)
	}
	if !slices.ContainsFunc(img.all("RUN"), func(in instruction) bool { return strings.Contains(in.args, "useradd --uid "+strconv.Itoa(uid)) }) {
		t.Errorf("USER %s is not made by useradd", user)
	}
}
