package workspace

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/agentfix/agentfix/internal/logattr"
)

// ErrSandboxDead is wrapped by every error that means the sandbox can no
// longer run commands: its program is missing, the working copy is gone, a
// process cannot start, or the working copy outgrew its disk limit. A
// WorkTree whose working copy is gone wraps it too. Package tools turns it
// into agent.ErrEnvDead.
var ErrSandboxDead = errors.New("sandbox dead")

// Mount points inside the sandbox (DESIGN.md §7, §8).
const (
	// WorkspaceDir is where the working copy is mounted; commands start there.
	WorkspaceDir = "/workspace"
	// CacheDir is where the job's cache directory is mounted; it is HOME.
	CacheDir = "/cache"
)

// Defaults applied when an Options field is zero.
const (
	DefaultTimeout       = 10 * time.Minute
	DefaultProcesses     = 4096
	DefaultMemoryBytes   = 4 << 30
	DefaultFileSizeBytes = 1 << 30
	DefaultDiskBytes     = 20 << 30
)

// Command is one command to run in a sandbox.
type Command struct {
	// Script is run as `bash -c Script` in /workspace, stdin empty (with
	// Options.Image, by the image's sh when it has no bash).
	Script string
	// Timeout bounds the command; 0 means Options.Timeout.
	Timeout time.Duration
	// Network gives the command network access: for bwrap, egress to the
	// public internet (or Options.SetupEgress) from a network namespace of
	// its own, never the host's services. Only setup commands set it.
	// With Options.Image, a Network command is setup in one more way: it
	// runs as root (uid and gid 0) over the image's writable layer, so
	// what it installs (in /usr, /etc, /opt…) is written to
	// Image.Layer and seen, read-only, by every later command of the job.
	Network bool
}

// Result is what a command did. A command that ran and failed is a Result,
// not an error.
type Result struct {
	// Output is stdout and stderr as the command interleaved them, cut to
	// Options.OutputLimit bytes (head and tail) with a line saying how many
	// bytes were left out.
	Output string
	// Elided is the number of output bytes left out.
	Elided int64
	// ExitCode is the exit status of bash; 128+n when a signal n ended it;
	// -1 when the command timed out.
	ExitCode int
	// TimedOut is set when the timeout killed the command's process tree.
	TimedOut bool
	// Duration is the wall time of the command.
	Duration time.Duration
	// OOMKilled is set when the kernel killed a process of the command
	// for the job's memory limit; Output then ends with a line saying so
	// ("killed: out of memory (limit 4 GiB)").
	OOMKilled bool
}

// Limits bound what a job's commands may use. Zero fields take the
// defaults. With Options.Cgroups, bwrap enforces Processes and MemoryBytes
// for the whole job (every process of every command, and the pages of its
// tmpfs mounts) in a cgroup of its own; without, per process or per user
// as each field says.
type Limits struct {
	// Processes caps the number of processes: pids.max of the job's cgroup
	// for bwrap with cgroups; else RLIMIT_NPROC for bwrap and none,
	// counted per real user (all the jobs of the worker's uid together)
	// and never enforced for root; --pids-limit for docker.
	Processes int
	// MemoryBytes caps memory: memory.max (v2) or memory.limit_in_bytes
	// (v1) of the job's cgroup for bwrap with cgroups, swap included where
	// the kernel accounts it; else per process (RLIMIT_DATA) for bwrap and
	// none; for the container (--memory) for docker.
	MemoryBytes int64
	// FileSizeBytes caps the size of any file a command writes (RLIMIT_FSIZE).
	FileSizeBytes int64
	// TmpfsBytes is the size of each of the sandbox's memory file systems
	// (/tmp, /var/tmp and /dev/shm for bwrap, /tmp for docker). Zero means
	// a quarter of MemoryBytes, so that a full /tmp fails with ENOSPC
	// before it makes the job run out of memory.
	TmpfsBytes int64
	// DiskBytes caps the disk use of the working copy and the cache
	// together (and of the bwrap sandbox's image layer, Options.Image,
	// whose upper directory is walked too when there is no job disk): the
	// size of the job disk when Options.OnJobDisk is set
	// (a write past it fails), else checked after every command by a walk
	// of both, and exceeding it kills the sandbox.
	DiskBytes int64
	// DiskInodes caps the number of files, directories and symlinks in the
	// working copy and the cache, the same two ways. Zero means one per
	// DefaultBytesPerInode bytes of DiskBytes.
	DiskInodes int64
}

// Options configure a sandbox of any kind. Each job builds its own sandbox
// for its working copy and cache.
type Options struct {
	// Workspace is the host directory of the working copy, mounted at
	// /workspace. Required.
	Workspace string
	// Cache is the job's host cache directory, mounted at /cache and used as
	// HOME. Required; never shared between repositories.
	Cache string
	// Timeout is the default per-command timeout.
	Timeout time.Duration
	// OutputLimit is the number of output bytes a Result keeps.
	OutputLimit int
	// Limits bound the job's commands.
	Limits Limits
	// Cgroups, when set (from CheckLimits or OpenCgroups), gives the bwrap
	// sandbox a cgroup of its own, made by NewBwrap and removed by Close,
	// that holds every process of its commands from their first
	// instruction and enforces Limits.MemoryBytes and Limits.Processes for
	// the job as a whole. The other sandboxes ignore it.
	Cgroups *Cgroups
	// OnJobDisk says that Workspace and Cache are on a job disk
	// (WorkTree.OnJobDisk), whose size and inode count the kernel limits:
	// the sandbox then does not walk them after each command.
	OnJobDisk bool
	// Env adds variables to the sandbox environment (after the allow-list,
	// so they may override it). Never put secrets here.
	Env map[string]string
	// Binary is the bwrap or docker executable; empty means look it up on
	// PATH. Unused by None.
	Binary string
	// ReadOnlyDirs are extra host directories bwrap mounts read-only at the
	// same path (toolchains installed outside /usr). The Go toolchain found
	// on the worker's PATH is added automatically, except with Image.
	ReadOnlyDirs []string
	// ExtraPath are directories, as seen inside the sandbox, put in front of
	// PATH (bwrap, in front of Image's PATH too, and none; docker's image
	// keeps its own PATH).
	ExtraPath []string
	// DockerImage is the container image of the docker sandbox. Required
	// there.
	DockerImage string
	// Image, when set, is the root filesystem bwrap runs commands in instead of the host's system directories.
	Image *Image
	// AllowUnsandboxed must be true to construct the none sandbox (from
	// AGENTFIX_ALLOW_UNSANDBOXED).
	AllowUnsandboxed bool
	// Logger receives debug records of each command; nil discards them.
	Logger *slog.Logger

	// SetupEgress narrows where bwrap's setup commands (Command.Network)
	// may connect to the listed hosts: host names or IPv4 addresses, each
	// with an optional port ("proxy.golang.org", "deb.debian.org:443").
	// Names are resolved by the worker before each command and pinned in
	// the sandbox's /etc/hosts. Empty means the public IPv4 internet. See
	// ValidateSetupEgress; the package doc says what setup never reaches.
	SetupEgress []string
	// SetupResolver resolves SetupEgress names; nil means
	// net.DefaultResolver.
	SetupResolver Resolver
	// Slirp4netns is the slirp4netns executable that gives bwrap's setup
	// commands their network; empty means look it up on PATH.
	Slirp4netns string
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// withDefaults validates o and fills its zero fields.
func (o Options) withDefaults() (Options, error) {
	if o.Workspace == "" || o.Cache == "" {
		return o, fmt.Errorf("sandbox options: Workspace and Cache are required")
	}
	for _, dir := range []*string{&o.Workspace, &o.Cache} {
		abs, err := filepath.Abs(*dir)
		if err != nil {
			return o, fmt.Errorf("sandbox options: %w", err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return o, fmt.Errorf("sandbox options: %w", err)
		}
		if !fi.IsDir() {
			return o, fmt.Errorf("sandbox options: %s is not a directory", abs)
		}
		*dir = abs
	}
	for k := range o.Env {
		if !envName.MatchString(k) {
			return o, fmt.Errorf("sandbox options: invalid environment variable name %q", k)
		}
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.OutputLimit <= 0 {
		o.OutputLimit = DefaultOutputLimit
	}
	if o.Limits.Processes <= 0 {
		o.Limits.Processes = DefaultProcesses
	}
	if o.Limits.MemoryBytes <= 0 {
		o.Limits.MemoryBytes = DefaultMemoryBytes
	}
	if o.Limits.FileSizeBytes <= 0 {
		o.Limits.FileSizeBytes = DefaultFileSizeBytes
	}
	if o.Limits.TmpfsBytes <= 0 {
		o.Limits.TmpfsBytes = o.Limits.MemoryBytes / 4
	}
	if o.Limits.DiskBytes <= 0 {
		o.Limits.DiskBytes = DefaultDiskBytes
	}
	if o.Limits.DiskInodes <= 0 {
		o.Limits.DiskInodes = JobDiskOptions{Bytes: o.Limits.DiskBytes}.withDefaults().Inodes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o, nil
}

// checkAlive reports ErrSandboxDead when the working copy or cache is gone.
func (o Options) checkAlive() error {
	for _, dir := range []string{o.Workspace, o.Cache} {
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrSandboxDead, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%w: %s is not a directory", ErrSandboxDead, dir)
		}
	}
	return nil
}

// checkDisk reports ErrSandboxDead when the working copy and cache (and
// extra, an image's layer) use more than the disk limits, or cannot all be
// measured. It measures nothing on a job disk, where the kernel enforces
// the limits.
func (o Options) checkDisk(extra ...string) error {
	if o.OnJobDisk {
		return nil
	}
	what := "the working copy and cache"
	if len(extra) > 0 {
		what = "the working copy, cache and image layer"
	}
	var used diskUse
	for _, dir := range append([]string{o.Workspace, o.Cache}, extra...) {
		u, err := diskUsage(dir)
		if err != nil {
			return fmt.Errorf("%w: the disk use of %s cannot be measured, so it counts as over the limit: %w", ErrSandboxDead, what, err)
		}
		used.bytes += u.bytes
		used.inodes += u.inodes
	}
	if used.bytes > o.Limits.DiskBytes {
		return fmt.Errorf("%w: %s use %d bytes, over the limit of %d", ErrSandboxDead, what, used.bytes, o.Limits.DiskBytes)
	}
	if used.inodes > o.Limits.DiskInodes {
		return fmt.Errorf("%w: %s hold %d files and directories, over the limit of %d", ErrSandboxDead, what, used.inodes, o.Limits.DiskInodes)
	}
	return nil
}

// logRun records one command at debug level.
func (o Options) logRun(kind string, c Command, res Result, err error) {
	msg := "sandbox command"
	if c.Network {
		msg = "sandbox command with network"
	}
	o.Logger.Debug(msg, logattr.Sandbox, kind, logattr.Command, c.Script,
		logattr.ExitCode, res.ExitCode, logattr.Duration, res.Duration, logattr.Err, err)
}
