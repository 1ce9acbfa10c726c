package deploy_test

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// repoRoot is the build context of deploy/Dockerfile.
const repoRoot = ".."

func TestDockerfileBuildStage(t *testing.T) {
	df := parseDockerfile(t, "Dockerfile")
	if len(df.stages) < 2 {
		t.Fatalf("got %d stages, want a build stage and a runtime stage", len(df.stages))
	}
	build := df.stages[0]
	if build.name != "build" || build.base != "golang:${GO_VERSION}-bookworm" {
		t.Errorf("first stage: FROM %s AS %s, want FROM golang:${GO_VERSION}-bookworm AS build", build.base, build.name)
	}
	var goVersion string
	for _, a := range df.globalArgs {
		if v, ok := strings.CutPrefix(a.args, "GO_VERSION="); ok {
			goVersion = v
		}
	}
	if want := goDirective(t); goVersion != want {
		t.Errorf("ARG GO_VERSION=%s, want go.mod's go %s", goVersion, want)
	}

	var compile *instruction
	for _, in := range build.all("RUN") {
		if strings.Contains(in.args, "go build") {
			compile = &in
		}
	}
	if compile == nil {
		t.Fatalf("build stage: no RUN with go build")
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version=${VERSION}", "-X main.revision=${REVISION}", "-o /out/bot", "./cmd/bot"} {
		if !strings.Contains(compile.args, want) {
			t.Errorf("line %d: go build without %s: %s", compile.line, want, compile.args)
		}
	}
	for _, want := range []string{"--mount=type=cache,target=/go/pkg/mod", "--mount=type=cache,target=/root/.cache/go-build"} {
		if !slices.Contains(compile.flags, want) {
			t.Errorf("line %d: go build without the cache mount %s", compile.line, want)
		}
	}
}

func TestDockerfileRuntimeStage(t *testing.T) {
	df := parseDockerfile(t, "Dockerfile")
	rt := df.stages[len(df.stages)-1]
	if rt.base != "debian:bookworm-slim" {
		t.Errorf("runtime stage: FROM %s, want debian:bookworm-slim", rt.base)
	}

	var packages []string
	for _, in := range rt.all("RUN") {
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
	slices.Sort(packages)
	// git for the worker's git CLI, bubblewrap for the sandbox, prlimit
	// and unshare (util-linux) for its limits and setup's namespace,
	// slirp4netns and iproute2 for setup's network, ca-certificates for
	// HTTPS.
	if diff := cmp.Diff([]string{"bubblewrap", "ca-certificates", "git", "iproute2", "slirp4netns", "util-linux"}, packages); diff != "" {
		t.Errorf("runtime packages (-want +got):\n%s", diff)
	}

	if uid := imageUID(t); uid == 0 {
		t.Errorf("USER is root; want a fixed non-root uid")
	}

	env := dockerfileEnv(t, rt)
	checkSettingNames(t, env)
	_, port, err := net.SplitHostPort(env["AGENTFIX_LISTEN_ADDR"])
	if err != nil {
		t.Fatalf("ENV AGENTFIX_LISTEN_ADDR: %v", err)
	}
	if got := lastArgs(t, rt, "EXPOSE"); got != port || port != "8080" {
		t.Errorf("EXPOSE %s with AGENTFIX_LISTEN_ADDR %s: want both 8080", got, env["AGENTFIX_LISTEN_ADDR"])
	}
	for _, cmd := range []string{"WORKDIR", "VOLUME"} {
		if got := lastArgs(t, rt, cmd); got != env["AGENTFIX_DATA_DIR"] {
			t.Errorf("%s %s: want AGENTFIX_DATA_DIR %s", cmd, got, env["AGENTFIX_DATA_DIR"])
		}
	}

	copies := map[string]string{} // destination → source
	for _, in := range rt.all("COPY") {
		f := strings.Fields(in.args)
		copies[f[len(f)-1]] = strings.Join(append(in.flags, f[:len(f)-1]...), " ")
	}
	for _, tc := range []struct {
		cmd, want, binary, copiedFrom string
	}{
		{"ENTRYPOINT", `["bot"]`, "/usr/local/bin/bot", "--from=build /out/bot"},
		{"HEALTHCHECK", `CMD ["agentfix-healthcheck", "/healthz"]`, "/usr/local/bin/agentfix-healthcheck", "deploy/healthcheck.sh"},
		{"CMD", `["serve"]`, "", ""},
	} {
		if got := lastArgs(t, rt, tc.cmd); got != tc.want {
			t.Errorf("%s %s, want %s", tc.cmd, got, tc.want)
		}
		if tc.binary != "" && copies[tc.binary] != tc.copiedFrom {
			t.Errorf("%s runs %s: copied from %q, want %q", tc.cmd, tc.binary, copies[tc.binary], tc.copiedFrom)
		}
	}
	if hc := rt.all("HEALTHCHECK"); len(hc) == 1 {
		for _, want := range []string{"--interval=", "--timeout=", "--retries="} {
			if !slices.ContainsFunc(hc[0].flags, func(f string) bool { return strings.HasPrefix(f, want) }) {
				t.Errorf("HEALTHCHECK without %s", want)
			}
		}
	}
}

// TestDockerfileCopiesWhatExists checks every COPY source from the build
// context against the repository, and that the health check is executable.
func TestDockerfileCopiesWhatExists(t *testing.T) {
	df := parseDockerfile(t, "Dockerfile")
	for _, st := range df.stages {
		for _, in := range st.all("COPY") {
			if slices.ContainsFunc(in.flags, func(f string) bool { return strings.HasPrefix(f, "--from=") }) {
				continue
			}
			f := strings.Fields(in.args)
			for _, src := range f[:len(f)-1] {
				if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil {
					t.Errorf("line %d: COPY %s: %v", in.line, src, err)
				}
			}
		}
	}
	info, err := os.Stat("healthcheck.sh")
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm()&0o111 != 0o111 {
		t.Errorf("healthcheck.sh: mode %v, want executable by everyone (COPY keeps the mode)", info.Mode().Perm())
	}
}

func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			got = append(got, line)
		}
	}
	// The git history, local data and runs stay out of the build context,
	// and so does every secret a developer keeps in the checkout.
	for _, want := range []string{".git/", "data/", "bin/", "agentfix-runs/", ".env", "**/.env", "*.pem", "**/*.pem"} {
		if !slices.Contains(got, want) {
			t.Errorf(".dockerignore: no %q line", want)
		}
	}
}

// imageUID returns the uid of the runtime stage's USER.
func imageUID(t *testing.T) int64 {
	t.Helper()
	df := parseDockerfile(t, "Dockerfile")
	user := lastArgs(t, df.stages[len(df.stages)-1], "USER")
	uid, err := strconv.ParseInt(strings.Split(user, ":")[0], 10, 64)
	if err != nil {
		t.Fatalf("USER %s: want a numeric uid (Kubernetes' runAsNonRoot checks it): %v", user, err)
	}
	return uid
}

// lastArgs returns the arguments of the stage's last cmd instruction.
func lastArgs(t *testing.T, st stage, cmd string) string {
	t.Helper()
	all := st.all(cmd)
	if len(all) == 0 {
		t.Fatalf("stage %s: no %s", st.base, cmd)
	}
	return all[len(all)-1].args
}

// dockerfileEnv returns the stage's ENV settings (KEY=value form).
func dockerfileEnv(t *testing.T, st stage) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, in := range st.all("ENV") {
		for _, kv := range strings.Fields(in.args) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("line %d: ENV %s: want KEY=value", in.line, in.args)
			}
			env[k] = v
		}
	}
	return env
}

// goDirective returns the go version of the module's go.mod.
func goDirective(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("go.mod: no go directive")
	return ""
}
