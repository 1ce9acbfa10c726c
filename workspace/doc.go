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
