// Package workspace owns what the worker does to a repository on disk: the
// working copy of a job, the private git directory the worker diffs and
// commits with, and the sandboxes that run commands in the working copy
// (DESIGN.md §8).
//
// # Sandboxes
//
// Bwrap (the default), Docker and None run one Command at a time as
// `bash -c` in /workspace, the working copy mounted there, with an
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
