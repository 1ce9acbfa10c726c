package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Mount tables of the kinds of host the worker meets.
const (
	hybridMounts = `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	v2Mounts = `25 20 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	// A container without a cgroup namespace: the mounts show the
	// container's part of each hierarchy, /proc/self/cgroup the host's
	// path.
	dockerV1Mounts = `600 590 0:31 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory
601 590 0:35 /docker/abc /sys/fs/cgroup/pids ro,nosuid - cgroup cgroup rw,pids
602 590 0:40 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup rw,cpu,cpuacct
`
	spaceMounts = `40 30 0:37 / /sys/fs/cgroup\040v2 rw,relatime - cgroup2 cgroup2 rw
`
)

func TestPlaceCgroups(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, self, mounts string
		want               map[string]cgroupPlace
		wantWhy            map[string]string
	}{
		{
			name:   "hybrid: memory and pids on v1",
			self:   "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/f3\n0::/\n",
			mounts: hybridMounts,
			want: map[string]cgroupPlace{
				"memory": {dir: "/sys/fs/cgroup/memory/process_api/f3"},
				"pids":   {dir: "/sys/fs/cgroup/pids"},
			},
			wantWhy: map[string]string{},
		},
		{
			name:   "unified",
			self:   "0::/system.slice/agentfix.service\n",
			mounts: v2Mounts,
			want: map[string]cgroupPlace{
				"memory": {v2: true, dir: "/sys/fs/cgroup/system.slice/agentfix.service"},
				"pids":   {v2: true, dir: "/sys/fs/cgroup/system.slice/agentfix.service"},
			},
			wantWhy: map[string]string{},
		},
		{
			name:   "unified in a cgroup namespace",
			self:   "0::/\n",
			mounts: v2Mounts,
			want: map[string]cgroupPlace{
				"memory": {v2: true, dir: "/sys/fs/cgroup"},
				"pids":   {v2: true, dir: "/sys/fs/cgroup"},
			},
			wantWhy: map[string]string{},
		},
		{
			name:   "v1 container without a cgroup namespace",
			self:   "12:pids:/docker/abc\n5:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n",
			mounts: dockerV1Mounts,
			want: map[string]cgroupPlace{
				"memory": {dir: "/sys/fs/cgroup/memory"},
				"pids":   {dir: "/sys/fs/cgroup/pids"},
			},
			wantWhy: map[string]string{},
		},
		{
			name:   "own cgroup outside the mounted part",
			self:   "12:pids:/docker/other\n5:memory:/docker/abcdef\n",
			mounts: dockerV1Mounts,
			want:   map[string]cgroupPlace{},
			wantWhy: map[string]string{
				"memory": "this process's cgroup /docker/abcdef lies outside the part /docker/abc mounted at /sys/fs/cgroup/memory",
				"pids":   "this process's cgroup /docker/other lies outside the part /docker/abc mounted at /sys/fs/cgroup/pids",
			},
		},
		{
			name:    "v1 controller not mounted, no v2",
			self:    "5:memory:/\n",
			mounts:  "",
			want:    map[string]cgroupPlace{},
			wantWhy: map[string]string{"memory": "the cgroup v1 memory hierarchy is not mounted", "pids": "this process is in no cgroup v2 and no v1 hierarchy has the pids controller"},
		},
		{
			name:    "escaped mount point",
			self:    "0::/job\n",
			mounts:  spaceMounts,
			want:    map[string]cgroupPlace{"memory": {v2: true, dir: "/sys/fs/cgroup v2/job"}, "pids": {v2: true, dir: "/sys/fs/cgroup v2/job"}},
			wantWhy: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := placeCgroups(tt.self, tt.mounts, jobControllers)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(cgroupPlace{})); diff != "" {
				t.Errorf("places (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWhy, why); diff != "" {
				t.Errorf("why (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGroupPlaces(t *testing.T) {
	t.Parallel()
	v2 := map[string]cgroupPlace{"memory": {v2: true, dir: "/c"}, "pids": {v2: true, dir: "/c"}}
	v1 := map[string]cgroupPlace{"memory": {dir: "/m"}, "pids": {dir: "/p"}}
	opts := cmp.AllowUnexported(cgroupPlace{})
	if diff := cmp.Diff([]cgroupPlace{{v2: true, dir: "/c", controllers: []string{"memory", "pids"}}}, groupPlaces(v2), opts); diff != "" {
		t.Errorf("v2 (-want +got):\n%s", diff)
	}
	want := []cgroupPlace{{dir: "/m", controllers: []string{"memory"}}, {dir: "/p", controllers: []string{"pids"}}}
	if diff := cmp.Diff(want, groupPlaces(v1), opts); diff != "" {
		t.Errorf("v1 (-want +got):\n%s", diff)
	}
}

func TestCgroupLimitFiles(t *testing.T) {
	t.Parallel()
	l := Limits{MemoryBytes: 1 << 30, Processes: 100}
	tests := []struct {
		name        string
		v2          bool
		controllers []string
		want        []cgroupFile
	}{
		{"v2", true, []string{"memory", "pids"}, []cgroupFile{
			{name: "memory.max", value: "1073741824"},
			{name: "memory.swap.max", value: "0", optional: true},
			{name: "pids.max", value: "100"},
		}},
		{"v1 memory", false, []string{"memory"}, []cgroupFile{
			{name: "memory.limit_in_bytes", value: "1073741824"},
			{name: "memory.memsw.limit_in_bytes", value: "1073741824", optional: true},
		}},
		{"v1 pids", false, []string{"pids"}, []cgroupFile{{name: "pids.max", value: "100"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, cgroupLimitFiles(tt.v2, tt.controllers, l), cmp.AllowUnexported(cgroupFile{})); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCgroupV2CloneAndKill runs the cgroup v2 paths on the real kernel:
// a process cloned into a job's cgroup, and every process killed through
// cgroup.kill. It needs a writable cgroup v2 (controllers are not needed:
// on a hybrid host memory and pids are on v1).
func TestCgroupV2CloneAndKill(t *testing.T) {
	t.Parallel()
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	places, why := placeCgroups(string(self), string(mounts), []string{"agentfix-none"})
	p, ok := places["agentfix-none"]
	if !ok {
		t.Skipf("no cgroup v2 here: %s", why["agentfix-none"])
	}
	name, err := randomName("agentfix-test-")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(p.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		if os.Geteuid() != 0 {
			t.Skipf("cgroup v2 %s not writable as uid %d: %v", p.dir, os.Geteuid(), err)
		}
		t.Fatal(err)
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	j := &jobCgroup{name: name, dirs: []string{dir}, dirFile: f}
	t.Cleanup(func() {
		if err := j.remove(); err != nil {
			t.Errorf("remove: %v", err)
		}
	})

	sh, err := shell()
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("agentfix-v2-%d", time.Now().UnixNano())
	res, err := runProcess(context.Background(), process{
		argv:   limitsArgv(sh, j, []string{"/bin/bash", "-c", "cat /proc/self/cgroup; setsid -f bash -c 'exec -a " + marker + " sleep 1000' </dev/null >/dev/null 2>&1"}),
		env:    []string{"PATH=/usr/bin:/bin"},
		cgroup: j.cloneInto(),
	}, time.Minute, 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	var own string
	for _, line := range strings.Split(string(self), "\n") {
		if v, ok := strings.CutPrefix(line, "0::"); ok {
			own = v
		}
	}
	if want := "0::" + filepath.Join(own, name) + "\n"; !strings.Contains(res.Output, want) {
		t.Errorf("the process ran in %q, want the job's cgroup %q", res.Output, want)
	}
	// setsid -f has forked the escaped process before it returned: it is in
	// the job's cgroup, whether or not it has exec'd sleep yet.
	if procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err != nil || strings.TrimSpace(string(procs)) == "" {
		t.Fatalf("the escaped process is not in the job's cgroup (%q, %v)", procs, err)
	}
	if err := j.empty(); err != nil {
		t.Fatal(err)
	}
	if processWithMarker(t, marker) {
		t.Errorf("process %s survived the cgroup's kill", marker)
	}
	if procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs")); strings.TrimSpace(string(procs)) != "" {
		t.Errorf("the job's cgroup still holds %q", procs)
	}
}

func TestUnescapeMount(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/t\011ab\134`: "/t\tab\\", `/bad\9`: `/bad\9`} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}
