// Package workspace owns what the worker does to a repository on disk: the
// working copy of a job, the private git directory the worker diffs and
// commits with, and the sandboxes that run commands in the working copy
// (DESIGN.md §8).
//
// # Sandboxes
//
// Bwrap (the default), Docker and None run one Command at a time as
// `bash -c` in /workspace (bwrap in an image without bash: its sh), the working copy mounted there, with an
// allow-listed environment (never the worker's own), a per-command timeout,
// a head+tail output cap, resource limits and the whole process tree killed
// when the command ends, times out or is cancelled. A per-job cache
// directory, mounted writable at /cache and used as HOME (GOCACHE, GOPATH,
// npm and pip caches live under it), persists across the job's commands so
// repeated builds are warm. Network is off unless Command.Network is set,
// which only setup commands do. Each kind is a concrete type built by its own
// constructor from the same Options, so the caller can select one by name
// from a map; a sandbox that can no longer run commands returns an error
// wrapping ErrSandboxDead.
//
// # Setup's network
//
// A command with Network set (setup) runs in a network namespace of its own
// with user-mode NAT, never in the host's: the host's loopback, its
// abstract unix sockets (they belong to a network namespace) and every
// service on it stay out of reach. The chain is prlimit → `unshare --user
// --map-root-user --net` (a user namespace whose root is the worker's own
// user, which owns the new network namespace) → a fixed sh prelude that
// installs the blocking rules with iproute2 → bwrap with --share-net. bwrap
// reports its child on --info-fd and waits on --block-fd; the worker then
// starts slirp4netns attached to that namespace by the pid of its own
// child, which cannot be reused before the worker reaps it (after checking
// that its namespaces are not the worker's; slirp4netns 1.2's
// --enable-sandbox ignores --userns-path when not root, so it gets the
// pid), waits for --ready-fd, and releases the command. slirp4netns ends when the worker closes its --exit-fd after the
// command, or when the worker dies.
//
// slirp4netns rather than pasta: it is built to attach to a namespace
// someone else created, with ready and exit descriptors that give its
// lifetime a clear owner; it behaves the same for a worker running as root
// and as an unprivileged uid (pasta cannot map uid 0 when started by root,
// and Debian bookworm's pasta then spins); it forwards no host ports unless
// asked (pasta's -T auto, its default, forwards the host's bound loopback
// ports into the namespace); and --disable-host-loopback, --enable-sandbox
// and --enable-seccomp confine it. Its throughput is below pasta's, which
// downloads of dependencies do not notice. There is no fallback to pasta:
// one tested path is worth more than two.
//
// The blocking is policy routing, installed as root of the new namespace
// before bwrap starts (iproute2's `ip -4 -batch`: one process, rules as
// data, no netlink code in the worker, which as a multithreaded Go process
// cannot enter a user namespace). Rules are looked up before any routing
// table, so a prohibited range stays prohibited however specific a route
// is (the tap's on-link 10.0.2.0/24 route does not open 10/8). Allowed
// first: slirp4netns's gateway 10.0.2.2 (the kernel checks the default
// route's gateway against the rules; --disable-host-loopback refuses
// connections to it) and its DNS forwarder 10.0.2.3 on port 53, which asks
// the host's resolver, so names resolve as on the host. Prohibited: this
// host (0/8, 127/8), private networks (10/8, 172.16/12, 192.168/16),
// carrier-grade NAT (100.64/10), link-local (169.254/16, cloud metadata),
// 192.0.0/24, 198.18/15, multicast and reserved space, and every IPv4
// address of this host with the subnet it sits on, read at each command.
// IPv6 is prohibited as a whole (fe80::/10 and fc00::/7 with it):
// slirp4netns runs without IPv6, whose support it calls experimental.
// Options.SetupEgress narrows egress further to the listed hosts (and
// ports): the worker resolves their names before each command, pins them in
// the sandbox's /etc/hosts and allows exactly those addresses; anything
// else is prohibited. A listed host is never a way around the prohibited
// ranges. Commands without Network have no network at all.
//
// # Images
//
// With Options.Image, bwrap's root is an unpacked container image
// (package rootfs) instead of the host's system directories: none of
// those, of /etc or of the worker's Go toolchain is mounted, only the
// ReadOnlyDirs asked for; /proc, /dev, the sized tmpfs mounts, /workspace
// and /cache are as without one. The image's root is never written. Each
// command gets a user and mount namespace of its own (`unshare --user
// --map-root-user --mount`, with --net too for setup: one user namespace,
// the network's prelude and then the overlay's), in which a fixed sh
// prelude mounts a kernel overlay (bubblewrap 0.8 has no --overlay) on
// the job's Image.Layer, with userxattr, and execs bwrap with it as the
// root. Setup (Command.Network) mounts the layer's upper directory
// writable over the image and runs as uid 0 (the worker's uid outside),
// which owns the image's files, so installing into /usr works; setup
// commands run one at a time. Every other command mounts the upper
// directory and the image as read-only lower layers, so nothing but
// setup writes the layer and commands may overlap. The lowest layer holds
// the mount points an image may lack. The overlay's work directory, which
// the kernel leaves mode 000 with a whiteout in it, is removed after each
// setup command, so the job directory stays removable by a worker that is
// not root. The environment is the image's, the allow-list over it, PATH
// the image's followed by the per-job tool directories; scripts run with
// the image's bash, or its sh when it has none. A layer overlayfs refuses
// as an upper layer (on overlayfs, say: a container's root without a
// volume) kills the sandbox at its first setup command with mount(8)'s
// message; CheckImageOverlay finds that at startup.
//
// # Kernel surface
//
// Every bwrap command runs in a user namespace (--unshare-user) that
// cannot create further ones (--disable-userns), under a seccomp filter
// (seccomp.go) built with go-seccomp-bpf: namespaces (unshare and clone
// with a namespace flag, setns), the keyring, bpf, io_uring, perf events,
// ptrace and process_vm_*, every mount call, kexec and kernel modules fail
// with EPERM, so programs that probe for them degrade instead of dying;
// clone3 fails with ENOSYS, so glibc falls back to clone, whose flags the
// filter can read. The filter is an allow-list of the library's system
// call table for the worker's architecture (x86_64 and arm64; NewBwrap
// fails on others): system calls newer than the table and every call
// through another ABI (i386 on x86_64, 32-bit arm on arm64) fail with
// EPERM, x32 calls with ENOSYS, so 32-bit programs do not run.
//
// Resource limits use prlimit(1) from util-linux, which sets the limits and
// then execs the sandbox in place (same pid, so process-group handling is
// unchanged). Go cannot set rlimits on a child before exec without
// re-executing the worker binary, and setting them on the child after start
// races with its first fork. Limits: processes (RLIMIT_NPROC, which the
// kernel counts per real user and never enforces for uid 0), memory per
// process (RLIMIT_DATA, which, unlike RLIMIT_AS, does not count the large
// address-space reservations of Go and V8 runtimes), file size
// (RLIMIT_FSIZE), and the disk use of the working copy plus cache, checked
// after every command. The Docker sandbox uses Docker's own cgroup limits
// instead.

// # Limits
//
// A job's limits are the kernel's where the host allows (CheckLimits says
// which, and why not; the worker refuses to run without them unless told
// to):
//
//   - Memory file systems have a size: bwrap's /tmp, /var/tmp and /dev/shm
//     (Limits.TmpfsBytes each; /dev itself is read-only), docker's /tmp.
//   - Memory and processes: with Options.Cgroups, each Bwrap (one job) makes
//     a cgroup of its own under the worker's, on cgroup v2 or on the v1
//     memory and pids hierarchies, and removes it in Close. It is per job,
//     not per command, so that the limits bound the job as a whole (tmpfs
//     pages, page cache, commands that overlap) at one cgroup's cost. Every
//     command's processes are in it from their first instruction: on v2
//     they are cloned into it (clone3 CLONE_INTO_CGROUP); on v1 a small
//     /bin/sh wrapper of the worker's writes its own pid to the job's
//     cgroup.procs files before it execs prlimit and bwrap. The wrapper
//     also sets oom_score_adj to 1000, so whatever runs out of memory, the
//     kernel kills the job's processes before the worker. memory.max (v2) or
//     memory.limit_in_bytes (v1), with swap on top forbidden where the
//     kernel accounts it, bounds all the job's memory, tmpfs pages
//     included; an OOM kill in the job is counted (memory.events,
//     memory.oom_control) and reported in the command's Result. pids.max
//     bounds its processes per job, not per user. After each command,
//     anything left in the cgroup is killed before Run returns, also what
//     left bwrap's process group and session.
//   - Disk: WorkTreeOptions.Disk puts the working copy and the cache on a
//     JobDisk, an ext4 image of the job's size and inode count,
//     loop-mounted per job, so a write past it fails at once with ENOSPC;
//     Options.OnJobDisk tells the sandbox. Without one, the working copy
//     and cache are walked after each command: an entry the worker cannot
//     read counts as over the limit, and every entry as at least a block.
//
// prlimit(1) from util-linux sets the rlimits and then execs the sandbox in
// place (same pid, so process-group handling is unchanged): the file size
// (RLIMIT_FSIZE), no core files, and where the job has no cgroup, processes
// (RLIMIT_NPROC, which the kernel counts per real user and never enforces
// for uid 0) and memory per process (RLIMIT_DATA, which, unlike RLIMIT_AS,
// does not count the large address-space reservations of Go and V8
// runtimes). The Docker sandbox uses Docker's own cgroup limits instead.
//
// # Local git
//
// A WorkTree is a job's working copy (with its own ordinary .git, so the
// agent may use git inside the sandbox) plus a private git directory outside
// it that the sandbox never sees. Every git command the worker runs uses the
// private directory with --work-tree, no hooks, no fsmonitor, no external
// diff or textconv, no system or global config and an empty HOME, so nothing
// the repository or the agent planted runs on the worker.
//
// The Cache keeps one bare repository per GitHub repository. go-git fetches
// into it in process (the token never leaves the worker's memory) and hands
// the received pack to `git index-pack`, which indexes it several times
// faster than go-git's own parser. A job's working copy is made from the
// cache without any fetch: the cache's pack files are copied (as new files;
// copy_file_range, a reflink where the file system has them, never a
// hardlink) into the private git dir and the working copy's .git, git
// checks the base commit out with parallel checkout, and the working copy's
// .git gets a copy of the index that checkout wrote.
package workspace
