package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// limitsWrapper is the /bin/sh script every bwrap command starts with,
// before prlimit and bwrap. It makes the command's processes the first
// the kernel's OOM killer picks anywhere (a job that fills the host's or
// the container's memory dies before the worker does), writes its own pid
// to each cgroup.procs file given as an argument up to "--" (the job's v1
// cgroups: so bwrap and everything it starts are in them from their first
// instruction; only this script ran before, and it is the worker's), and
// execs the rest. On cgroup v2 the process is cloned into the job's cgroup
// instead and no file is given.
const limitsWrapper = `echo 1000 >/proc/self/oom_score_adj || exit 125
for f do
	[ "$f" = -- ] && break
	echo $$ >"$f" || { echo "agentfix: cannot join the job's cgroup ($f)" >&2; exit 125; }
	shift
done
shift
exec "$@"`

// limitsArgv returns the wrapper's argv that joins j and runs argv.
func limitsArgv(sh string, j *jobCgroup, argv []string) []string {
	out := []string{sh, "-c", limitsWrapper, "agentfix-limits"}
	out = append(out, j.joinFiles()...)
	out = append(out, "--")
	return append(out, argv...)
}

// shell returns the worker's /bin/sh.
func shell() (string, error) {
	if _, err := os.Stat("/bin/sh"); err == nil {
		return "/bin/sh", nil
	}
	return exec.LookPath("sh")
}

// tmpfsArgs returns bwrap's arguments for the sandbox's writable memory
// file systems, each of size bytes: /dev/shm, /tmp and /var/tmp. /dev is a
// tmpfs bwrap makes for the device nodes, which --size does not reach, so
// it is made read-only once /dev/shm is mounted on it (the device nodes
// are mounts of their own and stay writable).
func tmpfsArgs(size int64) []string {
	s := strconv.FormatInt(size, 10)
	return []string{
		"--dev", "/dev",
		"--size", s, "--tmpfs", "/dev/shm",
		"--remount-ro", "/dev",
		"--size", s, "--tmpfs", "/tmp",
		"--size", s, "--tmpfs", "/var/tmp",
	}
}

// oomNote is the line a Result gets when the kernel killed a process of
// the command for the job's memory limit.
func oomNote(limit int64) string {
	return "killed: out of memory (limit " + formatBytes(limit) + ")"
}

// formatBytes writes n in the largest binary unit that divides it, or in
// GiB or MiB with one decimal.
func formatBytes(n int64) string {
	units := []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range units {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + " " + u.name
		}
	}
	for _, u := range units[:2] {
		if n >= u.size {
			return strconv.FormatFloat(float64(n)/float64(u.size), 'f', 1, 64) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// appendLine adds line to output on a line of its own.
func appendLine(output, line string) string {
	if output != "" && !strings.HasSuffix(output, "\n") {
		output += "\n"
	}
	return output + line + "\n"
}

// LimitsReport says which per-job limits of the bwrap sandbox the worker
// can have the kernel enforce on this host (CheckLimits).
type LimitsReport struct {
	// Tmpfs is the size of the sandbox's /tmp, /var/tmp and /dev/shm
	// (bwrap's --size).
	Tmpfs LimitCheck
	// Memory is the memory of all of a job's processes and of its tmpfs
	// pages together (the job's cgroup).
	Memory LimitCheck
	// Processes is the number of a job's processes (the job's cgroup).
	Processes LimitCheck
	// Disk is the size and inode count of a job's working copy and cache
	// (a JobDisk).
	Disk LimitCheck
	// Cgroups makes the jobs' cgroups; nil when neither Memory nor
	// Processes is enforced. Every sandbox gets it in Options.Cgroups.
	Cgroups *Cgroups
}

// LimitCheck is whether one limit is enforced, and how, or why not.
type LimitCheck struct {
	Enforced bool
	// Detail says what enforces the limit, or why it cannot here.
	Detail string
}

// limits lists the report's checks with their names, in report order.
func (r LimitsReport) limits() []struct {
	name  string
	check LimitCheck
} {
	return []struct {
		name  string
		check LimitCheck
	}{{"tmpfs", r.Tmpfs}, {"memory", r.Memory}, {"processes", r.Processes}, {"disk", r.Disk}}
}

// String is the report for people: one line per limit.
func (r LimitsReport) String() string {
	var b strings.Builder
	for _, l := range r.limits() {
		state := "enforced"
		if !l.check.Enforced {
			state = "NOT enforced"
		}
		fmt.Fprintf(&b, "%-9s %s: %s\n", l.name, state, l.check.Detail)
	}
	return b.String()
}

// Err returns nil when every limit is enforced, else an error naming each
// one that is not, and why.
func (r LimitsReport) Err() error {
	var missing []string
	for _, l := range r.limits() {
		if !l.check.Enforced {
			missing = append(missing, l.name+" ("+l.check.Detail+")")
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the kernel cannot enforce these per-job limits here: %s", strings.Join(missing, "; "))
}

// checkDiskBytes is the size of the job disk CheckLimits makes and
// removes.
const checkDiskBytes = 16 << 20

// CheckLimits says which per-job limits the worker can have the kernel
// enforce here, trying each for real: it runs bwrap on PATH to see it has
// --size, opens the cgroups (OpenCgroups: a job cgroup is made, joined by
// a process and removed), and makes and removes a small job disk in
// dataDir. The error is for a check that could not run at all (dataDir
// missing); a limit that cannot be enforced is in the report.
func CheckLimits(ctx context.Context, dataDir string) (LimitsReport, error) {
	var r LimitsReport
	if fi, err := os.Stat(dataDir); err != nil {
		return r, fmt.Errorf("check limits: %w", err)
	} else if !fi.IsDir() {
		return r, fmt.Errorf("check limits: %s is not a directory", dataDir)
	}
	r.Tmpfs = checkTmpfs(ctx)

	cg, err := openCgroups()
	if err != nil {
		return r, fmt.Errorf("check limits: %w", err)
	}
	r.Memory, r.Processes = cg.check(ctrlMemory), cg.check(ctrlPids)
	if len(cg.hierarchies) > 0 {
		r.Cgroups = cg
	}

	name, err := randomName("limits-check-")
	if err != nil {
		return r, err
	}
	disk, err := NewJobDisk(ctx, filepath.Join(dataDir, name), JobDiskOptions{Bytes: checkDiskBytes})
	if err == nil {
		err = disk.Close()
	}
	if err != nil {
		r.Disk = LimitCheck{Detail: err.Error() + "; the working copy is measured after each command instead"}
	} else {
		r.Disk = LimitCheck{Enforced: true, Detail: "a loop-mounted ext4 image per job (size and inodes) in " + dataDir}
	}
	return r, nil
}

// checkTmpfs runs `bwrap --help` to see that bwrap can size a tmpfs.
func checkTmpfs(ctx context.Context) LimitCheck {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return LimitCheck{Detail: err.Error()}
	}
	res, err := runProcess(ctx, process{argv: []string{bwrap, "--help"}, env: []string{"LANG=C"}}, 30*time.Second, 64<<10)
	if err != nil {
		return LimitCheck{Detail: err.Error()}
	}
	if !strings.Contains(res.Output, "--size") {
		return LimitCheck{Detail: bwrap + " has no --size option (bubblewrap 0.5.0 or later has it)"}
	}
	return LimitCheck{Enforced: true, Detail: "bwrap --size for /tmp, /var/tmp and /dev/shm"}
}

// check returns the LimitCheck of ctrl.
func (c *Cgroups) check(ctrl string) LimitCheck {
	h := c.hierarchyOf(ctrl)
	if h == nil {
		return LimitCheck{Detail: c.why[ctrl]}
	}
	detail := "cgroup v1 " + ctrl + " controller, one cgroup per job under " + h.dir
	if h.v2 {
		detail = "cgroup v2 " + ctrl + " controller, one cgroup per job under " + h.dir
	}
	if ctrl == ctrlMemory && !h.swapLimited() {
		detail += " (swap not limited: the kernel accounts no swap here)"
	}
	return LimitCheck{Enforced: true, Detail: detail}
}

// swapLimited reports whether the hierarchy can limit swap too.
func (h *cgroupHierarchy) swapLimited() bool {
	name := "memory.memsw.limit_in_bytes"
	if h.v2 {
		name = "memory.swap.max"
	}
	_, err := os.Stat(filepath.Join(h.dir, name))
	return err == nil
}

// probe makes a job cgroup, runs a process the way the sandbox does, and
// checks it ran in the job's cgroup in every hierarchy.
func (c *Cgroups) probe() error {
	sh, err := shell()
	if err != nil {
		return err
	}
	j, err := c.newJob(Limits{MemoryBytes: DefaultMemoryBytes, Processes: DefaultProcesses})
	if err != nil {
		return err
	}
	res, err := runProcess(context.Background(), process{
		argv:   limitsArgv(sh, j, []string{"/bin/cat", "/proc/self/cgroup"}),
		env:    []string{"PATH=/usr/bin:/bin"},
		cgroup: j.cloneInto(),
	}, 30*time.Second, 64<<10)
	if err == nil && (res.TimedOut || res.ExitCode != 0) {
		err = fmt.Errorf("a process could not join the job's cgroup: exit %d: %s", res.ExitCode, strings.TrimSpace(res.Output))
	}
	if err == nil {
		if n := strings.Count(res.Output, "/"+j.name+"\n"); n < len(c.hierarchies) {
			err = fmt.Errorf("a process started for the job is in %d of its %d cgroups:\n%s", n, len(c.hierarchies), res.Output)
		}
	}
	return errors.Join(err, j.remove())
}

// jobLimits is what the bwrap sandbox puts around each command for the
// job's limits: the limits wrapper, prlimit and the job's cgroup.
type jobLimits struct {
	sh, prlimit string
	limits      Limits
	cgroup      *jobCgroup

	mu      sync.Mutex
	running int // commands in flight
	closed  bool
}

// newJobLimits prepares the limits of a job with options o (defaults
// applied), making its cgroup when o.Cgroups is set.
func newJobLimits(o Options, prlimit string) (*jobLimits, error) {
	sh, err := shell()
	if err != nil {
		return nil, fmt.Errorf("limits: %w", err)
	}
	l := &jobLimits{sh: sh, prlimit: prlimit, limits: o.Limits}
	if o.Cgroups != nil {
		if l.cgroup, err = o.Cgroups.newJob(o.Limits); err != nil {
			return nil, fmt.Errorf("limits: %w", err)
		}
	}
	return l, nil
}

// argv returns the command line that runs argv within the limits.
func (l *jobLimits) argv(argv []string) []string {
	return limitsArgv(l.sh, l.cgroup, append(prlimitArgs(l.prlimit, l.limits, l.cgroup), argv...))
}

// begin records the start of a command; its result goes to end. A
// closed sandbox runs no command: its cgroup is gone.
func (l *jobLimits) begin() (oomKills int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, fmt.Errorf("%w: the sandbox was closed", ErrSandboxDead)
	}
	l.running++
	return l.cgroup.oomKills(), nil
}

// end records the end of a command begun with oomKills: once no other
// command runs, nothing of the job is left running (processes that left
// the command's process group and session, or that bwrap could not yet
// tie to its own life, are in the job's cgroup all the same). It reports
// whether the kernel killed a process for the memory limit meanwhile, and
// then adds that to res.
func (l *jobLimits) end(res *Result, oomKills int64) (oom bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running--
	if l.running == 0 {
		if err := l.cgroup.empty(); err != nil {
			return false, fmt.Errorf("%w: %w", ErrSandboxDead, err)
		}
	}
	if l.cgroup.oomKills() > oomKills {
		res.OOMKilled = true
		res.Output = appendLine(res.Output, oomNote(l.cgroup.memoryBytes))
		return true, nil
	}
	return false, nil
}

// close removes the job's cgroup, killing what is left in it.
func (l *jobLimits) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.cgroup.remove()
}

// prlimitArgs returns the prlimit prefix that applies l to the command it
// execs; hard and soft limits are equal, and the sandbox has no capability
// to raise them. Processes and memory are limited per user and per
// process only where the job's cgroup cg does not limit them.
func prlimitArgs(prlimit string, l Limits, cg *jobCgroup) []string {
	args := []string{prlimit}
	if !cg.limitsProcesses() {
		args = append(args, "--nproc="+strconv.Itoa(l.Processes))
	}
	if !cg.limitsMemory() {
		args = append(args, "--data="+strconv.FormatInt(l.MemoryBytes, 10))
	}
	return append(args, "--fsize="+strconv.FormatInt(l.FileSizeBytes, 10), "--core=0", "--")
}
