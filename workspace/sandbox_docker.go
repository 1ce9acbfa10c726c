package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/agentfix/agentfix/internal/logattr"
)

// dockerDeadExit is the exit status of `docker run` when Docker itself
// failed (daemon unreachable, image missing, bad flags).
const dockerDeadExit = 125

// Docker runs each command in a fresh container through the docker CLI: no
// network, a read-only root file system, all capabilities dropped, no new
// privileges, cgroup limits on processes and memory, the worker's uid and
// gid (so the worker can edit what the command wrote), the working copy at
// /workspace and the cache at /cache. The image keeps its own PATH.
type Docker struct {
	opts   Options
	docker string
}

// NewDocker returns a docker sandbox for o after checking that the docker
// CLI exists and o.DockerImage is set. It does not contact the Docker daemon.
func NewDocker(o Options) (*Docker, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if o.DockerImage == "" {
		return nil, fmt.Errorf("docker sandbox: an image is required")
	}
	for _, dir := range []string{o.Workspace, o.Cache} {
		if strings.ContainsAny(dir, ":,") {
			return nil, fmt.Errorf("docker sandbox: %q cannot be a volume source (contains ':' or ',')", dir)
		}
	}
	bin := o.Binary
	if bin == "" {
		bin = "docker"
	}
	docker, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("docker sandbox: %w", err)
	}
	return &Docker{opts: o, docker: docker}, nil
}

// Close does nothing: each container is removed with its command. It is
// here so every sandbox can be closed alike.
func (d *Docker) Close() error { return nil }

// Run runs c in a fresh container. See Command and Result.
func (d *Docker) Run(ctx context.Context, c Command) (res Result, err error) {
	defer func() { d.opts.logRun("docker", c, res, err) }()
	if err := d.opts.checkAlive(); err != nil {
		return Result{}, err
	}
	name, err := containerName()
	if err != nil {
		return Result{}, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = d.opts.Timeout
	}
	res, err = runProcess(ctx, process{
		argv: d.args(name, c),
		// The CLI needs to find its config and daemon; nothing else of the
		// worker's environment reaches it, and -e sets the container's.
		env:    dockerCLIEnv(),
		dir:    d.opts.Workspace,
		onKill: func() { d.remove(name) },
	}, timeout, d.opts.OutputLimit)
	if err != nil {
		return res, fmt.Errorf("docker: %w", err)
	}
	if res.ExitCode == dockerDeadExit {
		return res, fmt.Errorf("%w: docker could not run the container: %s", ErrSandboxDead, strings.TrimSpace(res.Output))
	}
	if err := d.opts.checkDisk(); err != nil {
		return res, err
	}
	return res, nil
}

// args returns the docker CLI arguments that run c in container name.
func (d *Docker) args(name string, c Command) []string {
	network := "none"
	if c.Network {
		network = "bridge"
	}
	l := d.opts.Limits
	mem := strconv.FormatInt(l.MemoryBytes, 10)
	fsize := strconv.FormatInt(l.FileSizeBytes, 10)
	args := []string{
		d.docker, "run", "--rm",
		"--name", name,
		"--network=" + network,
		"--read-only",
		"--init",
		"--cap-drop=ALL",
		"--security-opt=no-new-privileges",
		"--pids-limit", strconv.Itoa(l.Processes),
		"--memory", mem,
		"--memory-swap", mem,
		"--ulimit", "fsize=" + fsize + ":" + fsize,
		"--ulimit", "core=0:0",
		"--user", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
		"--tmpfs", "/tmp:rw,exec,size=" + strconv.FormatInt(l.TmpfsBytes, 10),
		"-v", d.opts.Workspace + ":" + WorkspaceDir,
		"-v", d.opts.Cache + ":" + CacheDir,
		"-w", WorkspaceDir,
	}
	for _, kv := range sandboxEnv(CacheDir, nil, false, d.opts.Env) {
		args = append(args, "-e", kv)
	}
	return append(args, d.opts.DockerImage, "bash", "-c", c.Script)
}

// remove force-removes container name after its CLI process was killed:
// killing `docker run` does not stop the container.
func (d *Docker) remove(name string) {
	res, err := runProcess(context.Background(), process{
		argv: []string{d.docker, "rm", "--force", name},
		env:  dockerCLIEnv(),
	}, 30*time.Second, 4<<10)
	switch {
	case err != nil:
		d.opts.Logger.Warn("remove sandbox container "+name, logattr.Err, err)
	case res.ExitCode != 0 || res.TimedOut:
		d.opts.Logger.Warn("remove sandbox container "+name, logattr.Err, fmt.Sprintf("exit %d: %s", res.ExitCode, res.Output))
	}
}

// dockerCLIEnv is the environment of the docker CLI itself: what it needs
// to find its binary helpers, configuration and daemon.
func dockerCLIEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// containerName returns a fresh name for one command's container.
func containerName() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("container name: %w", err)
	}
	return "agentfix-" + hex.EncodeToString(b[:]), nil
}
