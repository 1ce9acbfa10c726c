package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The cgroup controllers a job is limited with.
const (
	ctrlMemory = "memory"
	ctrlPids   = "pids"
)

// jobControllers are the controllers every job's cgroup should have.
var jobControllers = []string{ctrlMemory, ctrlPids}

// Names of the cgroups the worker makes under its own: jobsCgroup holds
// one cgroup per job; workerLeaf receives the worker's own processes on
// cgroup v2, where a cgroup with processes cannot hand controllers down.
const (
	jobsCgroup = "agentfix"
	workerLeaf = "agentfix-worker"
)

// cgroupEmptyTimeout bounds how long the worker waits for the killed
// processes of a job's cgroup to exit.
const cgroupEmptyTimeout = 10 * time.Second

// Cgroups makes one cgroup per job, with the memory and pids controllers,
// under the worker's own cgroup: on cgroup v2, or on the v1 hierarchies
// that carry those controllers (a hybrid host has both; each controller is
// used where it is mounted). OpenCgroups finds and prepares them;
// Options.Cgroups gives them to the bwrap sandbox. A Cgroups is immutable
// and safe for concurrent use.
type Cgroups struct {
	hierarchies []cgroupHierarchy
	// why says, for each job controller not used, why.
	why map[string]string
}

// cgroupHierarchy is one mounted hierarchy jobs get a cgroup in.
type cgroupHierarchy struct {
	v2 bool
	// dir is the cgroup that holds the jobs' cgroups (…/agentfix).
	dir string
	// controllers are the job controllers used in this hierarchy.
	controllers []string
}

// OpenCgroups finds the hierarchies that carry the memory and pids
// controllers for this process and prepares, under its own cgroup in each,
// the cgroup "agentfix" that will hold one cgroup per job; it then runs a
// process in a job cgroup to prove it can. On cgroup v2 the worker's own
// cgroup must pass the controllers down, which the kernel refuses while it
// holds processes: they are first moved to a leaf "agentfix-worker" next to
// "agentfix" (the worker's cgroup is its own; a systemd unit needs
// Delegate=yes). The result may lack one of the controllers (see
// CheckLimits); the error says why for each when it lacks both.
func OpenCgroups() (*Cgroups, error) {
	c, err := openCgroups()
	if err != nil {
		return nil, err
	}
	if len(c.hierarchies) == 0 {
		var msgs []string
		for _, ctrl := range jobControllers {
			msgs = append(msgs, ctrl+": "+c.why[ctrl])
		}
		return nil, fmt.Errorf("cgroups: %s", strings.Join(msgs, "; "))
	}
	return c, nil
}

// openCgroups is OpenCgroups, returning what it found even when jobs can
// have neither controller.
func openCgroups() (*Cgroups, error) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	places, why := placeCgroups(string(self), string(mounts), jobControllers)
	c := &Cgroups{why: why}
	for _, p := range groupPlaces(places) {
		h, err := prepareHierarchy(p)
		if err != nil {
			for _, ctrl := range p.controllers {
				c.why[ctrl] = err.Error()
			}
			continue
		}
		c.hierarchies = append(c.hierarchies, h)
	}
	// A job cgroup joined by a process proves the cgroups are writable,
	// take the limits and hold what the sandbox starts.
	if len(c.hierarchies) > 0 {
		if err := c.probe(); err != nil {
			for _, h := range c.hierarchies {
				for _, ctrl := range h.controllers {
					c.why[ctrl] = err.Error()
				}
			}
			c.hierarchies = nil
		}
	}
	return c, nil
}

// has reports whether jobs get the controller ctrl.
func (c *Cgroups) has(ctrl string) bool {
	return c != nil && c.hierarchyOf(ctrl) != nil
}

// hierarchyOf returns the hierarchy that carries ctrl, or nil.
func (c *Cgroups) hierarchyOf(ctrl string) *cgroupHierarchy {
	if c == nil {
		return nil
	}
	for i := range c.hierarchies {
		if slices.Contains(c.hierarchies[i].controllers, ctrl) {
			return &c.hierarchies[i]
		}
	}
	return nil
}

// cgroupPlace is where a controller is for this process: its own cgroup's
// directory in the hierarchy that carries the controller.
type cgroupPlace struct {
	v2          bool
	dir         string
	controllers []string
}

// placeCgroups finds, from the text of /proc/self/cgroup and
// /proc/self/mountinfo, the directory of this process's own cgroup in the
// hierarchy of each of controllers: a v1 hierarchy mounted with it, else
// the cgroup v2 hierarchy (whose cgroup.controllers prepareHierarchy reads).
// why says, for a controller without a place, why.
func placeCgroups(selfCgroup, mountinfo string, controllers []string) (map[string]cgroupPlace, map[string]string) {
	v1 := map[string]string{} // controller → own path
	v2, haveV2 := "", false
	for _, line := range strings.Split(selfCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2, haveV2 = parts[2], true
			continue
		}
		for _, ctrl := range strings.Split(parts[1], ",") {
			v1[ctrl] = parts[2]
		}
	}
	mounts := parseCgroupMounts(mountinfo)
	places := map[string]cgroupPlace{}
	why := map[string]string{}
	for _, ctrl := range controllers {
		if path, ok := v1[ctrl]; ok {
			m, ok := findMount(mounts, func(m cgroupMount) bool { return !m.v2 && slices.Contains(m.controllers, ctrl) })
			if !ok {
				why[ctrl] = fmt.Sprintf("the cgroup v1 %s hierarchy is not mounted", ctrl)
				continue
			}
			dir, err := m.dirOf(path)
			if err != nil {
				why[ctrl] = err.Error()
				continue
			}
			places[ctrl] = cgroupPlace{dir: dir}
			continue
		}
		if !haveV2 {
			why[ctrl] = "this process is in no cgroup v2 and no v1 hierarchy has the " + ctrl + " controller"
			continue
		}
		m, ok := findMount(mounts, func(m cgroupMount) bool { return m.v2 })
		if !ok {
			why[ctrl] = "cgroup v2 is not mounted"
			continue
		}
		dir, err := m.dirOf(v2)
		if err != nil {
			why[ctrl] = err.Error()
			continue
		}
		places[ctrl] = cgroupPlace{v2: true, dir: dir}
	}
	return places, why
}

// groupPlaces merges the places of controllers that share a directory, in
// the order of jobControllers.
func groupPlaces(places map[string]cgroupPlace) []cgroupPlace {
	var out []cgroupPlace
	for _, ctrl := range jobControllers {
		p, ok := places[ctrl]
		if !ok {
			continue
		}
		i := slices.IndexFunc(out, func(q cgroupPlace) bool { return q.dir == p.dir })
		if i < 0 {
			out = append(out, cgroupPlace{v2: p.v2, dir: p.dir})
			i = len(out) - 1
		}
		out[i].controllers = append(out[i].controllers, ctrl)
	}
	return out
}

// cgroupMount is a mounted cgroup hierarchy.
type cgroupMount struct {
	v2          bool
	controllers []string // v1 only
	// root is the cgroup mounted at point (not / inside some containers).
	root, point string
}

// dirOf returns the directory of the cgroup path (as /proc/self/cgroup
// names it) under the mount.
func (m cgroupMount) dirOf(path string) (string, error) {
	rel, ok := strings.CutPrefix(path, m.root)
	if m.root == "/" {
		rel, ok = path, true
	}
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
		return "", fmt.Errorf("this process's cgroup %s lies outside the part %s mounted at %s", path, m.root, m.point)
	}
	return filepath.Join(m.point, rel), nil
}

func findMount(mounts []cgroupMount, match func(cgroupMount) bool) (cgroupMount, bool) {
	for _, m := range mounts {
		if match(m) {
			return m, true
		}
	}
	return cgroupMount{}, false
}

// parseCgroupMounts returns the cgroup mounts listed in the text of
// /proc/self/mountinfo.
func parseCgroupMounts(mountinfo string) []cgroupMount {
	var mounts []cgroupMount
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		m := cgroupMount{root: unescapeMount(f[3]), point: unescapeMount(f[4])}
		switch g[0] {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			m.controllers = strings.Split(g[2], ",")
		default:
			continue
		}
		mounts = append(mounts, m)
	}
	return mounts
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// prepareHierarchy makes the jobs' cgroup under the place p and, on v2,
// hands the controllers down to it.
func prepareHierarchy(p cgroupPlace) (cgroupHierarchy, error) {
	h := cgroupHierarchy{v2: p.v2, dir: filepath.Join(p.dir, jobsCgroup), controllers: p.controllers}
	if !p.v2 {
		if err := os.MkdirAll(h.dir, 0o755); err != nil {
			return h, fmt.Errorf("make the jobs' cgroup: %w", err)
		}
		return h, nil
	}
	avail, err := os.ReadFile(filepath.Join(p.dir, "cgroup.controllers"))
	if err != nil {
		return h, fmt.Errorf("cgroup v2 %s: %w", p.dir, err)
	}
	for _, ctrl := range p.controllers {
		if !slices.Contains(strings.Fields(string(avail)), ctrl) {
			return h, fmt.Errorf("the cgroup v2 %s has no %s controller (its parent does not delegate it)", p.dir, ctrl)
		}
	}
	if err := enableControllers(p.dir, p.controllers, true); err != nil {
		return h, err
	}
	if err := os.Mkdir(h.dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return h, fmt.Errorf("make the jobs' cgroup: %w", err)
	}
	return h, enableControllers(h.dir, p.controllers, false)
}

// enableControllers makes the cgroup v2 dir pass controllers to its
// children. When it holds processes and moveOut is set, they move to the
// leaf workerLeaf first.
func enableControllers(dir string, controllers []string, moveOut bool) error {
	control := filepath.Join(dir, "cgroup.subtree_control")
	have, err := os.ReadFile(control)
	if err != nil {
		return fmt.Errorf("cgroup v2 %s: %w", dir, err)
	}
	var add []string
	for _, ctrl := range controllers {
		if !slices.Contains(strings.Fields(string(have)), ctrl) {
			add = append(add, "+"+ctrl)
		}
	}
	if len(add) == 0 {
		return nil
	}
	err = writeCgroupFile(control, strings.Join(add, " "))
	if errors.Is(err, unix.EBUSY) && moveOut {
		if err := moveProcesses(dir, filepath.Join(dir, workerLeaf)); err != nil {
			return err
		}
		err = writeCgroupFile(control, strings.Join(add, " "))
	}
	if err != nil {
		return fmt.Errorf("enable %s in cgroup v2 %s: %w", strings.Join(controllers, ", "), dir, err)
	}
	return nil
}

// moveProcesses moves every process of the cgroup v2 from into the leaf
// to, which it makes.
func moveProcesses(from, to string) error {
	if err := os.Mkdir(to, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("make the worker's cgroup: %w", err)
	}
	// A process may fork while the others move; a few passes catch its
	// children.
	for range 10 {
		pids, err := readPids(filepath.Join(from, "cgroup.procs"))
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			err := writeCgroupFile(filepath.Join(to, "cgroup.procs"), strconv.Itoa(pid))
			if err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("move process %d to %s: %w", pid, to, err)
			}
		}
	}
	return fmt.Errorf("processes of %s keep appearing; cannot move them to %s", from, to)
}

// cgroupFile is a value to write to a file of a job's cgroup.
type cgroupFile struct {
	name, value string
	// optional files are skipped where the kernel does not have them.
	optional bool
}

// cgroupLimitFiles returns what to write, in order, to a job's cgroup in a
// hierarchy (v2 or v1) that carries controllers, to apply l: memory
// without swap on top of it, and processes.
func cgroupLimitFiles(v2 bool, controllers []string, l Limits) []cgroupFile {
	mem := strconv.FormatInt(l.MemoryBytes, 10)
	var files []cgroupFile
	if slices.Contains(controllers, ctrlMemory) {
		if v2 {
			files = append(files, cgroupFile{name: "memory.max", value: mem},
				cgroupFile{name: "memory.swap.max", value: "0", optional: true})
		} else {
			// memsw (memory plus swap) must not be below the memory limit,
			// so it is set second.
			files = append(files, cgroupFile{name: "memory.limit_in_bytes", value: mem},
				cgroupFile{name: "memory.memsw.limit_in_bytes", value: mem, optional: true})
		}
	}
	if slices.Contains(controllers, ctrlPids) {
		files = append(files, cgroupFile{name: "pids.max", value: strconv.Itoa(l.Processes)})
	}
	return files
}

// jobCgroup is the cgroup of one job, in each hierarchy. Its methods do
// nothing on a nil *jobCgroup (a sandbox without cgroups).
type jobCgroup struct {
	name string
	dirs []string
	// dirFile is the open directory of the v2 cgroup, which processes are
	// cloned into; nil when the job has no v2 cgroup.
	dirFile *os.File
	// v1Procs are the cgroup.procs files of the v1 cgroups, which the
	// limits wrapper writes its pid to before it execs the sandbox.
	v1Procs []string
	// oomFile and memoryBytes are set when the job's memory is limited:
	// the file with the oom_kill counter, and the limit.
	oomFile     string
	memoryBytes int64
	pids        bool
}

// newJob makes a cgroup for one job in each hierarchy, with the limits l.
func (c *Cgroups) newJob(l Limits) (*jobCgroup, error) {
	name, err := randomName("job-")
	if err != nil {
		return nil, err
	}
	j := &jobCgroup{name: name}
	for _, h := range c.hierarchies {
		dir := filepath.Join(h.dir, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			j.remove()
			return nil, fmt.Errorf("make the job's cgroup: %w", err)
		}
		j.dirs = append(j.dirs, dir)
		for _, f := range cgroupLimitFiles(h.v2, h.controllers, l) {
			err := writeCgroupFile(filepath.Join(dir, f.name), f.value)
			if f.optional && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				j.remove()
				return nil, fmt.Errorf("set %s of the job's cgroup: %w", f.name, err)
			}
		}
		if h.v2 {
			if j.dirFile, err = os.Open(dir); err != nil {
				j.remove()
				return nil, fmt.Errorf("open the job's cgroup: %w", err)
			}
		} else {
			j.v1Procs = append(j.v1Procs, filepath.Join(dir, "cgroup.procs"))
		}
		if slices.Contains(h.controllers, ctrlMemory) {
			// Both files have a line "oom_kill N".
			j.oomFile = filepath.Join(dir, "memory.oom_control")
			if h.v2 {
				j.oomFile = filepath.Join(dir, "memory.events")
			}
			j.memoryBytes = l.MemoryBytes
		}
		j.pids = j.pids || slices.Contains(h.controllers, ctrlPids)
	}
	return j, nil
}

// limitsMemory reports whether the cgroup bounds the job's memory.
func (j *jobCgroup) limitsMemory() bool { return j != nil && j.oomFile != "" }

// limitsProcesses reports whether the cgroup bounds the job's processes.
func (j *jobCgroup) limitsProcesses() bool { return j != nil && j.pids }

// cloneInto returns the directory to clone the job's processes into, or
// nil.
func (j *jobCgroup) cloneInto() *os.File {
	if j == nil {
		return nil
	}
	return j.dirFile
}

// joinFiles returns the cgroup.procs files the limits wrapper joins.
func (j *jobCgroup) joinFiles() []string {
	if j == nil {
		return nil
	}
	return j.v1Procs
}

// oomKills returns how many processes the kernel killed for the job's
// memory limit so far (0 without one).
func (j *jobCgroup) oomKills() int64 {
	if !j.limitsMemory() {
		return 0
	}
	b, err := os.ReadFile(j.oomFile)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// empty kills every process left in the job's cgroup and waits until
// they have exited.
func (j *jobCgroup) empty() error {
	if j == nil || len(j.dirs) == 0 {
		return nil
	}
	deadline := time.Now().Add(cgroupEmptyTimeout)
	delay := time.Millisecond
	for {
		var left []int
		for _, dir := range j.dirs {
			pids, err := readPids(filepath.Join(dir, "cgroup.procs"))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("list the job's processes: %w", err)
			}
			left = append(left, pids...)
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes of the job's cgroup %s did not exit within %s of SIGKILL", len(left), j.name, cgroupEmptyTimeout)
		}
		j.kill(left)
		time.Sleep(delay)
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// kill sends SIGKILL to the job's processes: all at once through
// cgroup.kill on cgroup v2, else to each of pids that is still in the
// job's cgroup (a pid read from cgroup.procs may have been reused since).
func (j *jobCgroup) kill(pids []int) {
	if j.dirFile != nil {
		if writeCgroupFile(filepath.Join(j.dirFile.Name(), "cgroup.kill"), "1") == nil {
			return
		}
	}
	for _, pid := range slices.Compact(slices.Sorted(slices.Values(pids))) {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		// The pidfd pins the process: if it is the one in /proc now and
		// that one is in the job's cgroup, the signal reaches it; if it
		// exited meanwhile, the signal reaches nothing.
		if cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); err == nil && strings.Contains(string(cg), "/"+j.name+"\n") {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
}

// remove kills what is left in the job's cgroup and removes it.
func (j *jobCgroup) remove() error {
	if j == nil {
		return nil
	}
	err := j.empty()
	if j.dirFile != nil {
		j.dirFile.Close()
		j.dirFile = nil
	}
	for _, dir := range slices.Backward(j.dirs) {
		if rerr := os.Remove(dir); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("remove the job's cgroup: %w", rerr))
		}
	}
	j.dirs = nil
	return err
}

// readPids reads a cgroup.procs file.
func readPids(file string) ([]int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// writeCgroupFile writes value to an existing file of a cgroup file
// system (never creating one), in one write as the kernel wants it.
func writeCgroupFile(file, value string) error {
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// randomName returns prefix followed by 16 random hex digits.
func randomName(prefix string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random name: %w", err)
	}
	return prefix + hex.EncodeToString(b[:]), nil
}
