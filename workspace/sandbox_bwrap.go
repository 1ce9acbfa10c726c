package workspace

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentfix/agentfix/internal/logattr"
)

// etcFiles are the parts of /etc a sandbox sees (read-only, when present):
// users and groups, name resolution, TLS roots, the dynamic linker cache,
// Debian's alternatives symlinks and the time zone. Nothing else of /etc
// (no shadow, no host keys, no credentials).
var etcFiles = []string{
	"passwd", "group", "hosts", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf",
	"services", "protocols", "ssl", "ca-certificates", "ca-certificates.conf", "pki",
	"alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone",
	"mime.types", "os-release", "debian_version",
}

// systemDirs are mounted read-only (or recreated as the same symlinks).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// Bwrap runs commands with bubblewrap: a tmpfs root with the system
// directories read-only, the working copy at /workspace and the cache at
// /cache writable, a private /tmp, /proc and /dev, every namespace unshared
// (so no network; a setup command gets a network namespace of its own with
// NAT, see the package doc), all capabilities dropped and a seccomp filter.
// It is the default sandbox. A Bwrap is one job's: with Options.Cgroups it
// holds the job's cgroup until Close. With Options.Image, the root is the
// image's instead of the host's system directories (see the package doc).
type Bwrap struct {
	opts    Options
	bwrap   string
	prlimit string
	// mounts are the read-only mounts after the system directories.
	mounts  []string
	pathDir []string
	// seccomp is the compiled filter (seccomp.go); network gives setup
	// commands their network (netns.go); limits are the job's (limits.go).
	seccomp []byte
	network *setupNetwork
	limits  *jobLimits
	// image is the overlay of Options.Image, or nil (image.go).
	image *imageOverlay
}

// NewBwrap returns a bwrap sandbox for o after checking that bwrap and
// prlimit exist, with the job's cgroup made when o.Cgroups is set. With
// o.Image it checks that the image's root is a directory and makes the
// directories of its layer.
func NewBwrap(o Options) (*Bwrap, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	bin := o.Binary
	if bin == "" {
		bin = "bwrap"
	}
	bwrap, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("bwrap sandbox: %w (install bubblewrap)", err)
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		return nil, fmt.Errorf("bwrap sandbox: %w (install util-linux)", err)
	}
	b := &Bwrap{opts: o, bwrap: bwrap, prlimit: prlimit, pathDir: o.ExtraPath}
	if b.seccomp, err = seccompProgram(); err != nil {
		return nil, fmt.Errorf("bwrap sandbox: %w", err)
	}
	if b.network, err = newSetupNetwork(o); err != nil {
		return nil, fmt.Errorf("bwrap sandbox: %w", err)
	}
	ro := o.ReadOnlyDirs
	for _, dir := range ro {
		if !filepath.IsAbs(dir) {
			return nil, fmt.Errorf("bwrap sandbox: read-only dir %q is not absolute", dir)
		}
	}
	if o.Image != nil {
		// The image brings its own system directories and toolchains;
		// only the read-only directories asked for are the host's.
		if b.image, err = newImageOverlay(*o.Image, ro); err != nil {
			return nil, fmt.Errorf("bwrap sandbox: %w", err)
		}
		b.opts.Image = &b.image.image
	} else if root := goRoot(); root != "" {
		b.pathDir = append(b.pathDir, filepath.Join(root, "bin"))
		ro = append(ro, root)
	}
	for _, dir := range ro {
		if b.image == nil && underSystemDir(dir) {
			continue
		}
		b.mounts = append(b.mounts, "--ro-bind", dir, dir)
	}
	if b.limits, err = newJobLimits(o, prlimit); err != nil {
		return nil, fmt.Errorf("bwrap sandbox: %w", err)
	}
	return b, nil
}

// Close removes the job's cgroup, killing any process left in it. The
// sandbox runs no command after Close.
func (b *Bwrap) Close() error {
	return b.limits.close()
}

// underSystemDir reports whether dir is already visible through systemDirs.
func underSystemDir(dir string) bool {
	for _, sys := range systemDirs {
		if dir == sys || strings.HasPrefix(dir, sys+"/") {
			return true
		}
	}
	return false
}

// Run runs c in a fresh sandbox. See Command and Result.
func (b *Bwrap) Run(ctx context.Context, c Command) (res Result, err error) {
	defer func() { b.opts.logRun("bwrap", c, res, err) }()
	if err := b.opts.checkAlive(); err != nil {
		return Result{}, err
	}
	env := sandboxEnv(CacheDir, b.pathDir, true, b.opts.Env)
	var layerDirs []string
	if b.image != nil {
		if err := b.image.checkAlive(); err != nil {
			return Result{}, err
		}
		env = imageEnv(b.image.image.Env, CacheDir, b.pathDir, b.opts.Env)
		layerDirs = []string{b.image.upper}
		if c.Network {
			end, err := b.image.beginSetup()
			if err != nil {
				return Result{}, err
			}
			defer func() {
				if err := end(); err != nil {
					b.opts.Logger.Warn("the image overlay's work directory is left behind", logattr.Sandbox, "bwrap", logattr.Err, err)
				}
			}()
		}
	}
	status, err := os.CreateTemp("", "agentfix-bwrap-status-")
	if err != nil {
		return Result{}, fmt.Errorf("bwrap status file: %w", err)
	}
	defer os.Remove(status.Name())
	defer status.Close()

	timeout := c.Timeout
	if timeout <= 0 {
		timeout = b.opts.Timeout
	}
	fds := &fdList{}
	fds.add(status) // fd 3, --json-status-fd
	iso, err := b.isolate(ctx, c, fds)
	if err != nil {
		return Result{}, fmt.Errorf("bwrap: %w", err)
	}
	defer iso.close()
	oomKills, err := b.limits.begin()
	if err != nil {
		return Result{}, err
	}
	argv := b.limits.argv(append(iso.prefix, b.args(c, iso.args)...))
	res, err = runProcess(ctx, process{
		argv:       argv,
		env:        env,
		dir:        b.opts.Workspace,
		extraFiles: fds.files,
		started:    iso.started(),
		cgroup:     b.limits.cgroup.cloneInto(),
	}, timeout, b.opts.OutputLimit)
	oom, lerr := b.limits.end(&res, oomKills)
	if err != nil {
		return res, fmt.Errorf("bwrap: %w", err)
	}
	if lerr != nil {
		return res, fmt.Errorf("bwrap: %w", lerr)
	}
	if !res.TimedOut {
		code, ok := bwrapExitCode(status)
		switch {
		case ok:
			res.ExitCode = code
		case oom:
			// The kernel killed bwrap itself for the memory limit.
		default:
			// The image's overlay could not be mounted (mount(8) said
			// why in a file of its own), or bwrap itself failed before
			// or while starting bash (its message is in the output).
			if iso.overlay != nil {
				if err := iso.overlay.failure(); err != nil {
					return res, fmt.Errorf("%w: %w", ErrSandboxDead, err)
				}
			}
			return res, fmt.Errorf("%w: bwrap could not start the command: %s", ErrSandboxDead, bwrapFailure(res))
		}
	}
	if err := b.opts.checkDisk(layerDirs...); err != nil {
		return res, err
	}
	return res, nil
}

// args returns bwrap's arguments for c: mount points are created under
// bwrap's own tmpfs root, which is remounted read-only at the end, or,
// with an image, the overlay is the root (writable for setup) and its
// lowest layer has the mount points; isolation (namespaces, seccomp,
// setup's network) follows the root's mounts.
func (b *Bwrap) args(c Command, isolation []string) []string {
	args := []string{b.bwrap, "--unshare-all"}
	args = append(args, "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox")
	if b.image != nil {
		args = append(args, b.image.rootArgs(c.Network)...)
	} else {
		args = append(args, hostRootArgs()...)
	}
	args = append(args, isolation...)
	args = append(args, "--proc", "/proc")
	args = append(args, tmpfsArgs(b.opts.Limits.TmpfsBytes)...)
	args = append(args,
		"--bind", b.opts.Workspace, WorkspaceDir,
		"--bind", b.opts.Cache, CacheDir,
	)
	// The read-only directories come last, so that /tmp's tmpfs does not
	// hide one below /tmp.
	args = append(args, b.mounts...)
	if b.image != nil {
		return append(args,
			"--chdir", WorkspaceDir,
			"--json-status-fd", "3",
			"sh", "-c", imageShell, "sh", c.Script,
		)
	}
	return append(args,
		"--remount-ro", "/",
		"--chdir", WorkspaceDir,
		"--json-status-fd", "3",
		"bash", "-c", c.Script,
	)
}

// hostRootArgs are bwrap's mounts of the host's system directories and
// the parts of /etc a sandbox sees.
func hostRootArgs() []string {
	var args []string
	for _, dir := range systemDirs {
		fi, err := os.Lstat(dir)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(dir)
			if err != nil {
				continue
			}
			args = append(args, "--symlink", target, dir)
		case fi.IsDir():
			args = append(args, "--ro-bind", dir, dir)
		}
	}
	for _, f := range etcFiles {
		args = append(args, "--ro-bind-try", "/etc/"+f, "/etc/"+f)
	}
	return args
}

// bwrapFailure says how bwrap ended when it reported no exit code of the
// command: its own message, or, when it printed none, its exit status (a
// signal by name: bwrap dies with the thread that started it).
func bwrapFailure(res Result) string {
	if out := strings.TrimSpace(res.Output); out != "" {
		return out
	}
	if res.ExitCode > 128 {
		return fmt.Sprintf("it was killed by %s and printed nothing", unix.SignalName(syscall.Signal(res.ExitCode-128)))
	}
	return fmt.Sprintf("it exited with status %d and printed nothing", res.ExitCode)
}

// bwrapExitCode reads the exit code bwrap wrote to its --json-status-fd
// file; ok is false when bwrap never reported one (it failed itself).
func bwrapExitCode(status *os.File) (code int, ok bool) {
	if _, err := status.Seek(0, 0); err != nil {
		return 0, false
	}
	// bwrap writes one JSON object per line, with no separators between
	// some versions' objects; a decoder reads them in sequence.
	dec := json.NewDecoder(bufio.NewReader(status))
	for {
		var rec struct {
			ExitCode *int `json:"exit-code"`
		}
		if err := dec.Decode(&rec); err != nil {
			return 0, false
		}
		if rec.ExitCode != nil {
			return *rec.ExitCode, true
		}
	}
}
