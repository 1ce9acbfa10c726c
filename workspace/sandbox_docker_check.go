package workspace

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// What CheckDocker found, wrapped with the docker CLI's answer.
var (
	// ErrDockerDaemon is a Docker daemon that does not answer.
	ErrDockerDaemon = errors.New("the Docker daemon does not answer")
	// ErrDockerImage is an image that is neither on this machine nor
	// pullable.
	ErrDockerImage = errors.New("the image is not on this machine and cannot be pulled")
)

// Bounds of CheckDocker's docker commands. A pull may fetch gigabytes.
const (
	dockerCheckTimeout = time.Minute
	dockerPullTimeout  = 30 * time.Minute
	dockerCheckOutput  = 8 << 10
)

// DockerCheck is what CheckDocker checks.
type DockerCheck struct {
	// Binary is the docker CLI (default "docker", looked up on PATH).
	Binary string
	// Image is the sandbox's image.
	Image string
	// OnPull, when set, is called before the image is pulled, which can
	// take minutes.
	OnPull func(image string)
}

// CheckDocker checks that the docker sandbox can start a container before
// any work depends on it: the CLI reaches its daemon (docker version) and
// the image is on this machine (docker image inspect) or is pulled. Its
// errors wrap ErrDockerDaemon or ErrDockerImage with what docker said.
func CheckDocker(ctx context.Context, c DockerCheck) error {
	bin := c.Binary
	if bin == "" {
		bin = "docker"
	}
	docker, err := exec.LookPath(bin)
	if err != nil {
		return fmt.Errorf("%w: no docker CLI: %w", ErrDockerDaemon, err)
	}
	if _, err := dockerCLI(ctx, dockerCheckTimeout, docker, "version", "--format", "{{.Server.Version}}"); err != nil {
		return fmt.Errorf("%w: %w", ErrDockerDaemon, err)
	}
	if _, err := dockerCLI(ctx, dockerCheckTimeout, docker, "image", "inspect", "--format", "{{.Id}}", "--", c.Image); err == nil {
		return nil
	}
	if c.OnPull != nil {
		c.OnPull(c.Image)
	}
	if _, err := dockerCLI(ctx, dockerPullTimeout, docker, "pull", "--quiet", "--", c.Image); err != nil {
		return fmt.Errorf("%s: %w: %w", c.Image, ErrDockerImage, err)
	}
	return nil
}

// dockerCLI runs one docker CLI command with a timeout and returns its
// output; a failure says the command and what it printed.
func dockerCLI(ctx context.Context, timeout time.Duration, docker string, args ...string) (string, error) {
	name := "docker"
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		name += " " + a
	}
	res, err := runProcess(ctx, process{argv: append([]string{docker}, args...), env: dockerCLIEnv()}, timeout, dockerCheckOutput)
	out := strings.Join(strings.Fields(res.Output), " ")
	switch {
	case err != nil:
		return "", fmt.Errorf("%s: %w", name, err)
	case res.TimedOut:
		return "", fmt.Errorf("%s did not finish within %s", name, timeout)
	case res.ExitCode != 0:
		if out == "" {
			out = fmt.Sprintf("exit code %d", res.ExitCode)
		}
		return "", fmt.Errorf("%s: %s", name, out)
	}
	return out, nil
}
