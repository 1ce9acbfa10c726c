package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentfix/agentfix/internal/copytree"
)

// DefaultBytesPerInode sizes a job disk's inode table when
// JobDiskOptions.Inodes is zero: one inode per 16 KiB, ext4's own default.
const DefaultBytesPerInode = 16 << 10

// mkfsTimeout bounds mkfs.ext4, which writes only the metadata of a new
// image.
const mkfsTimeout = 2 * time.Minute

// JobDiskOptions size a job disk. Zero fields take the defaults.
type JobDiskOptions struct {
	// Bytes is the size of the file system: DiskBytes of the job's Limits.
	// Zero means DefaultDiskBytes.
	Bytes int64
	// Inodes is the number of files, directories and symlinks it holds
	// (mkfs rounds it up to fill its inode tables). Zero means one per
	// DefaultBytesPerInode bytes.
	Inodes int64
}

func (o JobDiskOptions) withDefaults() JobDiskOptions {
	if o.Bytes <= 0 {
		o.Bytes = DefaultDiskBytes
	}
	if o.Inodes <= 0 {
		o.Inodes = max(o.Bytes/DefaultBytesPerInode, 1024)
	}
	return o
}

// JobDisk is a file system of one job's own: an ext4 image in a sparse file
// next to its mount point, loop-mounted there with nosuid and nodev. Its
// size and inode count are limits the kernel enforces on every write: a
// write past them fails at once with ENOSPC, whoever writes and whatever
// the permissions of what is already there. The image has no journal (it
// never outlives the job) and its inode tables are not zeroed (a new
// sparse file reads as zeros); a loop device with direct I/O keeps the
// image's blocks out of the page cache a second time. Making one needs
// root (CAP_SYS_ADMIN), /dev/loop-control and mkfs.ext4 (e2fsprogs);
// CheckLimits says whether this host can.
type JobDisk struct {
	dir, image string
}

// NewJobDisk makes a job disk of o's size and mounts it at dir, which must
// not exist or be empty; the image is dir+".img". Its root belongs to the
// worker's uid and gid and is empty (no lost+found).
func NewJobDisk(ctx context.Context, dir string, o JobDiskOptions) (*JobDisk, error) {
	o = o.withDefaults()
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("job disk: %w", err)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("job disk: %s is not empty", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("job disk: %w", err)
	}
	d := &JobDisk{dir: dir, image: dir + ".img"}
	if err := d.make(ctx, o); err != nil {
		os.Remove(d.image)
		os.Remove(dir)
		return nil, fmt.Errorf("job disk %s: %w", dir, err)
	}
	return d, nil
}

// make creates, formats and mounts the image.
func (d *JobDisk) make(ctx context.Context, o JobDiskOptions) error {
	img, err := os.OpenFile(d.image, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer img.Close()
	if err := img.Truncate(o.Bytes); err != nil {
		return fmt.Errorf("size the image: %w", err)
	}
	if err := mkfsExt4(ctx, d.image, o); err != nil {
		return err
	}
	loop, err := attachLoop(img)
	if err != nil {
		return err
	}
	// The device detaches itself (autoclear) once it is unmounted and
	// closed; until the mount holds it, this descriptor does.
	defer loop.Close()
	err = unix.Mount(loop.Name(), d.dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOATIME, "noinit_itable")
	if err != nil {
		return fmt.Errorf("mount %s on %s: %w", loop.Name(), d.dir, mountHint(err))
	}
	if err := os.Remove(filepath.Join(d.dir, "lost+found")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.Close()
		return err
	}
	return nil
}

// Dir is where the job disk is mounted.
func (d *JobDisk) Dir() string { return d.dir }

// Close unmounts the job disk (lazily when something still holds a file
// on it) and removes its image and mount point; what was on it is gone.
func (d *JobDisk) Close() error {
	if err := unmount(d.dir); err != nil {
		return fmt.Errorf("job disk %s: %w", d.dir, err)
	}
	var errs []error
	for _, p := range []string{d.image, d.dir} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("job disk %s: %w", d.dir, err)
	}
	return nil
}

// mkfsExt4 formats image for o: 4 KiB blocks, o.Inodes inodes, no blocks
// reserved for root (the sandbox is root in its namespace), no journal,
// lazily initialised tables, root directory owned by the worker.
func mkfsExt4(ctx context.Context, image string, o JobDiskOptions) error {
	mkfs, err := findSbin("mkfs.ext4")
	if err != nil {
		return fmt.Errorf("%w (install e2fsprogs)", err)
	}
	res, err := runProcess(ctx, process{
		argv: []string{mkfs, "-q", "-F", "-b", "4096", "-m", "0",
			"-N", strconv.FormatInt(o.Inodes, 10),
			"-O", "^has_journal,^resize_inode",
			"-E", fmt.Sprintf("nodiscard,lazy_itable_init=1,root_owner=%d:%d", os.Getuid(), os.Getgid()),
			"-L", "agentfix-job", image},
		env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"},
		dir: filepath.Dir(image),
	}, mkfsTimeout, 8<<10)
	if err != nil {
		return fmt.Errorf("mkfs.ext4: %w", err)
	}
	if res.TimedOut || res.ExitCode != 0 {
		return fmt.Errorf("mkfs.ext4 %s: exit %d: %s", image, res.ExitCode, strings.TrimSpace(res.Output))
	}
	return nil
}

// findSbin looks name up on PATH, then in the sbin directories a non-root
// PATH often lacks.
func findSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// attachLoop binds a free loop device to img, with autoclear and direct
// I/O, and returns it open.
func attachLoop(img *os.File) (*os.File, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("loop devices: %w", mountHint(err))
	}
	defer ctl.Close()
	cfg := unix.LoopConfig{Fd: uint32(img.Fd()), Size: 4096}
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR | unix.LO_FLAGS_DIRECT_IO
	copy(cfg.Info.File_name[:], "agentfix job disk "+filepath.Base(img.Name()))
	// Another process may take the free device between the two calls.
	for range 16 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("find a free loop device: %w", err)
		}
		dev, err := os.OpenFile("/dev/loop"+strconv.Itoa(n), os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("loop device: %w", err)
		}
		err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
		if err == nil {
			return dev, nil
		}
		dev.Close()
		if !errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("configure %s: %w", dev.Name(), err)
		}
	}
	return nil, errors.New("every free loop device was taken before it could be configured")
}

// mountHint adds what a permission error means here.
func mountHint(err error) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EPERM) {
		return fmt.Errorf("%w (mounting a job disk needs root with CAP_SYS_ADMIN and the loop devices; the worker runs as uid %d)", err, os.Geteuid())
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (no loop devices: load the loop module, or give the container /dev/loop-control and /dev/loop*)", err)
	}
	return err
}

// unmount unmounts dir, lazily when it is busy; a dir that is not a mount
// point (any more) is not an error.
func unmount(dir string) error {
	err := unix.Unmount(dir, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(dir, unix.MNT_DETACH)
	}
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", dir, err)
}

// RemoveJobDir deletes the job directory dir: it first unmounts every file
// system mounted at or under it (the job disk of a WorkTree, also one left
// by a worker that crashed), then removes everything, including what a
// sandbox made read-only or unreadable. A dir that does not exist is not
// an error.
func RemoveJobDir(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := unmountUnder(dir); err != nil {
		return fmt.Errorf("remove job directory: %w", err)
	}
	if err := copytree.Remove(dir); err != nil {
		return fmt.Errorf("remove job directory: %w", err)
	}
	return nil
}

// unmountUnder unmounts what is mounted at or under dir, deepest first.
func unmountUnder(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for _, line := range strings.Split(string(info), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		p := unescapeMount(f[4])
		if p == real || strings.HasPrefix(p, real+"/") {
			points = append(points, p)
		}
	}
	// Deepest first; a point mounted twice is unmounted twice.
	slices.SortStableFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		if err := unmount(p); err != nil {
			return err
		}
	}
	return nil
}
