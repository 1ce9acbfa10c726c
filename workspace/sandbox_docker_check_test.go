package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeDockerCLI writes a docker CLI stand-in that answers as a daemon that
// is down (daemon "down") or up, with the image on the machine (image
// "present"), pullable ("pullable") or neither; it records each call, one
// a line, in the returned log file.
func fakeDockerCLI(t *testing.T, daemon, image string) (bin, log string) {
	t.Helper()
	dir := t.TempDir()
	bin, log = filepath.Join(dir, "docker"), filepath.Join(dir, "calls")
	script := `#!/bin/sh
echo "$*" >> ` + log + `
if [ ` + daemon + ` = down ]; then
  echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2
  exit 1
fi
case "$1 ` + image + `" in
  "version "*) echo 27.1.1 ;;
  "image present") echo sha256:0123 ;;
  "image "*) echo 'Error: No such image: '"$6" >&2; exit 1 ;;
  "pull pullable") echo sha256:0123 ;;
  "pull "*) echo 'Error response from daemon: pull access denied for '"$4"', repository does not exist or may require '"'docker login'" >&2; exit 1 ;;
esac
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, log
}

// TestCheckDocker: the check asks the daemon, then the image, pulling it
// only when it is not on the machine, and says what docker answered.
func TestCheckDocker(t *testing.T) {
	t.Parallel()
	const image = "ghcr.io/example/toolchain:1"
	tests := []struct {
		name, daemon, image string
		wantErr             error
		wantMsg             string
		wantCalls           []string
		wantPull            bool
	}{
		{name: "image present", daemon: "up", image: "present",
			wantCalls: []string{"version --format {{.Server.Version}}", "image inspect --format {{.Id}} -- " + image}},
		{name: "image pulled", daemon: "up", image: "pullable", wantPull: true,
			wantCalls: []string{"version --format {{.Server.Version}}", "image inspect --format {{.Id}} -- " + image, "pull --quiet -- " + image}},
		{name: "daemon down", daemon: "down", image: "present", wantErr: ErrDockerDaemon,
			wantMsg:   "the Docker daemon does not answer: docker version: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
			wantCalls: []string{"version --format {{.Server.Version}}"}},
		{name: "image missing", daemon: "up", image: "missing", wantErr: ErrDockerImage, wantPull: true,
			wantMsg:   image + ": the image is not on this machine and cannot be pulled: docker pull: Error response from daemon: pull access denied for " + image + ", repository does not exist or may require 'docker login'",
			wantCalls: []string{"version --format {{.Server.Version}}", "image inspect --format {{.Id}} -- " + image, "pull --quiet -- " + image}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bin, log := fakeDockerCLI(t, tt.daemon, tt.image)
			var pulled []string
			err := CheckDocker(context.Background(), DockerCheck{Binary: bin, Image: image, OnPull: func(i string) { pulled = append(pulled, i) }})
			if !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) {
				t.Errorf("CheckDocker = %v, want %v", err, tt.wantErr)
			}
			if err != nil && err.Error() != tt.wantMsg {
				t.Errorf("CheckDocker error:\n got %s\nwant %s", err, tt.wantMsg)
			}
			raw, _ := os.ReadFile(log)
			if diff := cmp.Diff(tt.wantCalls, strings.Split(strings.TrimSpace(string(raw)), "\n")); diff != "" {
				t.Errorf("docker calls (-want +got):\n%s", diff)
			}
			if got := len(pulled) == 1 && pulled[0] == image; got != tt.wantPull {
				t.Errorf("OnPull calls %q, want a pull: %v", pulled, tt.wantPull)
			}
		})
	}
}

func TestCheckDockerWithoutCLI(t *testing.T) {
	t.Parallel()
	err := CheckDocker(context.Background(), DockerCheck{Binary: filepath.Join(t.TempDir(), "docker"), Image: "x"})
	if !errors.Is(err, ErrDockerDaemon) || !strings.Contains(err.Error(), "no docker CLI") {
		t.Errorf("CheckDocker without the CLI = %v, want ErrDockerDaemon saying there is no docker CLI", err)
	}
}
