package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentfix/agentfix/internal/copytree"
)

// Image is an unpacked container image a sandbox runs in.
type Image struct {
	// Root is the image's root directory (rootfs.Root.Dir). It is never written: commands see it through an overlay.
	Root string
	// Env is the image config's environment, PATH first ("KEY=VALUE").
	Env []string
	// Layer is the job's host directory for the writable layer over Root (made if missing; on the job disk when there is one, so it counts against the job's disk limit). Setup commands write it; the job's other commands see what setup left there, read-only.
	Layer string
}

// The directories bwrap's sandbox keeps in Image.Layer.
const (
	// layerUpper holds what setup wrote: the upper layer of setup's
	// overlay, the top lower layer of every other command's.
	layerUpper = "upper"
	// layerWork is the overlay's work directory while setup runs.
	layerWork = "work"
	// layerMounts holds the mount points the sandbox needs (/workspace,
	// /cache, /proc, /dev, /tmp, /var/tmp, /etc/resolv.conf, /etc/hosts
	// and the read-only directories), as the lowest layer: an image
	// lacking one shows it, an image's own entry wins.
	layerMounts = "mounts"
	// layerRoot is where each command's own mount namespace mounts the
	// overlay that bwrap then makes its root.
	layerRoot = "root"
)

// overlayPrelude runs in the command's new user and mount namespace, as
// its root: it mounts the overlay with mount(8), whose message goes to the
// file of the fd its first argument names, then execs the rest (bwrap).
// Its arguments are the fd, mount(8)'s path, the overlay's options and the
// mount point; nothing of them is interpolated into it.
const overlayPrelude = `fd=$1 mount=$2 opts=$3 dir=$4; shift 4
"$mount" -t overlay -o "$opts" overlay "$dir" >"/dev/fd/$fd" 2>&1 || exit 125
eval "exec $fd>&-"
exec "$@"`

// imageShell is the script runner in an image: bash when the image has it
// (on its PATH), as on the host, else its sh.
const imageShell = `command -v bash >/dev/null 2>&1 && exec bash -c "$1"
exec sh -c "$1"`

// imageOverlay is the image of one bwrap sandbox and the directories of its
// layer.
type imageOverlay struct {
	image Image // Root and Layer absolute
	mount string
	// upper, work, mounts and root are the layer's directories (layerUpper…).
	upper, work, mounts, root string
	// setup serialises setup commands: one overlay at a time writes the
	// upper layer, and each leaves the work directory to be cleaned.
	setup sync.Mutex
}

// newImageOverlay checks img and prepares its layer: the directories, and
// the mount points of the sandbox and of readOnlyDirs.
func newImageOverlay(img Image, readOnlyDirs []string) (*imageOverlay, error) {
	mount, err := exec.LookPath("mount")
	if err != nil {
		return nil, fmt.Errorf("image: %w (install mount)", err)
	}
	if img.Root == "" || img.Layer == "" {
		return nil, fmt.Errorf("image: Root and Layer are required")
	}
	for _, p := range []*string{&img.Root, &img.Layer} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
		*p = abs
	}
	for _, p := range []string{img.Root, img.Layer} {
		if strings.ContainsAny(p, `,:\"`) || strings.ContainsFunc(p, func(r rune) bool { return r < ' ' }) {
			return nil, fmt.Errorf("image: %q cannot be an overlay layer (contains ',', ':', '\\', '\"' or a control character)", p)
		}
	}
	fi, err := os.Stat(img.Root)
	if err != nil {
		return nil, fmt.Errorf("image root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("image root %s is not a directory", img.Root)
	}
	if within(img.Layer, img.Root) || within(img.Root, img.Layer) {
		return nil, fmt.Errorf("image: the layer %s and the root %s must not contain each other", img.Layer, img.Root)
	}
	ov := &imageOverlay{
		image: img, mount: mount,
		upper:  filepath.Join(img.Layer, layerUpper),
		work:   filepath.Join(img.Layer, layerWork),
		mounts: filepath.Join(img.Layer, layerMounts),
		root:   filepath.Join(img.Layer, layerRoot),
	}
	dirs := []string{ov.upper, ov.root}
	for _, d := range append([]string{"/proc", "/dev", "/tmp", "/var/tmp", "/etc", WorkspaceDir, CacheDir}, readOnlyDirs...) {
		dirs = append(dirs, filepath.Join(ov.mounts, d))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("image layer: %w", err)
		}
	}
	for _, name := range []string{"resolv.conf", "hosts"} {
		f, err := os.OpenFile(filepath.Join(ov.mounts, "etc", name), os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return nil, fmt.Errorf("image layer: %w", err)
		}
		f.Close()
	}
	if err := writeAptSandboxUser(ov.mounts); err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	return ov, nil
}

// aptSandboxUser is the apt configuration the image's commands see
// (unless the image has a file of that name): setup runs as root in a user
// namespace that maps root alone, where apt's drop to its _apt user for
// downloads (setgroups, seteuid 42) fails, so `apt-get install` in setup
// would fail; apt keeps root's identity instead, which is the sandbox's
// unprivileged user outside it.
const aptSandboxUser = `// Written by agentfix: only root exists in this sandbox's user namespace.
APT::Sandbox::User "root";
`

// writeAptSandboxUser puts aptSandboxUser in the mounts layer's
// /etc/apt/apt.conf.d, under the image's own files.
func writeAptSandboxUser(mounts string) error {
	dir := filepath.Join(mounts, "etc", "apt", "apt.conf.d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "00agentfix-sandbox-user"), []byte(aptSandboxUser), 0o644)
}

// within reports whether path is dir or lies under it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// options returns the overlay's mount options: for setup the layer's upper
// directory over the image, writable; for every other command the upper
// directory and the image, both read-only lower layers.
func (ov *imageOverlay) options(setup bool) string {
	if setup {
		return "lowerdir=" + ov.image.Root + ":" + ov.mounts + ",upperdir=" + ov.upper + ",workdir=" + ov.work + ",userxattr"
	}
	return "ro,lowerdir=" + ov.upper + ":" + ov.image.Root + ":" + ov.mounts + ",userxattr"
}

// rootArgs are bwrap's arguments that make the overlay its root: writable
// for setup, read-only for every other command.
func (ov *imageOverlay) rootArgs(setup bool) []string {
	if setup {
		return []string{"--bind", ov.root, "/"}
	}
	return []string{"--ro-bind", ov.root, "/"}
}

// checkAlive reports ErrSandboxDead when the image's root or layer is gone.
func (ov *imageOverlay) checkAlive() error {
	for _, dir := range []string{ov.image.Root, ov.upper, ov.mounts, ov.root} {
		if _, err := os.Stat(dir); err != nil {
			return fmt.Errorf("%w: image: %w", ErrSandboxDead, err)
		}
	}
	return nil
}

// beginSetup takes the layer for a setup command and makes the overlay's
// work directory; the returned function cleans it and releases the layer.
func (ov *imageOverlay) beginSetup() (end func() error, err error) {
	ov.setup.Lock()
	if err := os.MkdirAll(ov.work, 0o755); err != nil {
		ov.setup.Unlock()
		return nil, fmt.Errorf("%w: image layer: %w", ErrSandboxDead, err)
	}
	return func() error {
		defer ov.setup.Unlock()
		return removeWork(ov.work)
	}, nil
}

// removeWork removes an overlay's work directory once no overlay uses it.
// The kernel makes work/work mode 000 and keeps a whiteout it shares in it
// (for every file setup deleted), which a worker that is not root could
// not remove: os.RemoveAll of the job directory would fail.
func removeWork(dir string) error {
	if err := copytree.Remove(dir); err != nil {
		return fmt.Errorf("remove the overlay's work directory: %w", err)
	}
	return nil
}

// overlayRun is the overlay of one command: the file mount(8) reports to.
type overlayRun struct {
	ov    *imageOverlay
	setup bool
	msg   *os.File
	msgFD int
}

// prepare makes the overlay of one command; fds numbers its file in the
// sandbox's process.
func (ov *imageOverlay) prepare(setup bool, fds *fdList) (*overlayRun, error) {
	f, err := dataFile("agentfix-overlay-mount", nil)
	if err != nil {
		return nil, err
	}
	return &overlayRun{ov: ov, setup: setup, msg: f, msgFD: fds.add(f)}, nil
}

// prelude is the overlay's part of what runs before bwrap (after the
// user and mount namespaces are made), sh being the host's /bin/sh.
func (r *overlayRun) prelude(sh string) []string {
	return []string{sh, "-c", overlayPrelude, "agentfix-overlay", strconv.Itoa(r.msgFD), r.ov.mount, r.ov.options(r.setup), r.ov.root}
}

// failure returns the error of an overlay that could not be mounted, or
// nil when mount(8) said nothing.
func (r *overlayRun) failure() error {
	if _, err := r.msg.Seek(0, io.SeekStart); err != nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(r.msg, 16<<10))
	msg := strings.TrimSpace(string(b))
	if msg == "" {
		return nil
	}
	kind := "read-only"
	if r.setup {
		kind = "writable"
	}
	return fmt.Errorf("the kernel refused the %s overlay of the image's layer %s over %s: %s "+
		"(overlayfs cannot keep an upper layer on some file systems, overlayfs itself among them: "+
		"put the job directory on a volume or a job disk; the kernel's log says why)",
		kind, r.ov.image.Layer, r.ov.image.Root, strings.Join(strings.Fields(msg), " "))
}

// close releases the file.
func (r *overlayRun) close() {
	r.msg.Close()
}

// CheckImageOverlay mounts a throwaway overlay under dir the way the bwrap
// sandbox mounts an image's (in a user and mount namespace of its own, its
// writable layer in dir): a writable one that adds a file and deletes one
// of the lower layer, then a read-only one over that, which must show both
// and refuse writes. The error says why the kernel cannot; the worker
// refuses images at startup then. Everything it made in dir is removed.
func CheckImageOverlay(dir string) (err error) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return fmt.Errorf("image overlay check: %w (install util-linux)", err)
	}
	sh, err := shell()
	if err != nil {
		return fmt.Errorf("image overlay check: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "overlay-check-")
	if err != nil {
		return fmt.Errorf("image overlay check: %w", err)
	}
	defer func() {
		if rerr := RemoveJobDir(tmp); rerr != nil && err == nil {
			err = fmt.Errorf("image overlay check: %w", rerr)
		}
	}()
	lower := filepath.Join(tmp, "image")
	if err := os.Mkdir(lower, 0o755); err != nil {
		return fmt.Errorf("image overlay check: %w", err)
	}
	for _, name := range []string{"kept", "deleted"} {
		if err := os.WriteFile(filepath.Join(lower, name), []byte(name+"\n"), 0o644); err != nil {
			return fmt.Errorf("image overlay check: %w", err)
		}
	}
	ov, err := newImageOverlay(Image{Root: lower, Layer: filepath.Join(tmp, "layer")}, nil)
	if err != nil {
		return fmt.Errorf("image overlay check: %w", err)
	}
	run := func(setup bool, script string) error {
		fds := &fdList{}
		r, err := ov.prepare(setup, fds)
		if err != nil {
			return err
		}
		defer r.close()
		argv := append([]string{unshare, "--user", "--map-root-user", "--mount", "--"}, r.prelude(sh)...)
		argv = append(argv, sh, "-c", script, "agentfix-overlay-check", ov.root)
		res, err := runProcess(context.Background(), process{
			argv: argv, env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"}, extraFiles: fds.files,
		}, time.Minute, 16<<10)
		switch {
		case err != nil:
			return err
		case res.TimedOut:
			return fmt.Errorf("the check timed out after a minute")
		case res.ExitCode == 0:
			return nil
		}
		if ferr := r.failure(); ferr != nil {
			return ferr
		}
		return fmt.Errorf("exit %d: %s", res.ExitCode, strings.TrimSpace(res.Output))
	}
	end, err := ov.beginSetup()
	if err != nil {
		return fmt.Errorf("image overlay check: %w", err)
	}
	err = run(true, `echo added >"$1/added" && rm "$1/deleted"`)
	err = errors.Join(err, end())
	if err != nil {
		return fmt.Errorf("image overlay check in %s: the writable overlay: %w", dir, err)
	}
	err = run(false, `[ "$(cat "$1/added" "$1/kept")" = "$(printf 'added\nkept')" ] && [ ! -e "$1/deleted" ] || { echo "the read-only overlay does not show the writable one's changes" >&2; exit 1; }
if (: >>"$1/kept") 2>/dev/null; then echo "the read-only overlay took a write" >&2; exit 1; fi`)
	if err != nil {
		return fmt.Errorf("image overlay check in %s: the read-only overlay: %w", dir, err)
	}
	return nil
}
