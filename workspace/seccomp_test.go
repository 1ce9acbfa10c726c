package workspace

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBwrapSeccompDeniesKernelSurface runs the probe's denied system calls
// in the sandbox, with and without network: each fails with EPERM
// (clone3 with ENOSYS, so glibc falls back to clone).
func TestBwrapSeccompDeniesKernelSurface(t *testing.T) {
	t.Parallel()
	o := testOptions(t)
	buildProbe(t, o.Workspace)
	b := newTestBwrap(t, o)
	want := map[string]string{}
	for _, name := range []string{
		"unshare(CLONE_NEWUSER)", "unshare(CLONE_NEWNET)", "clone(CLONE_NEWUSER)", "setns",
		"keyctl", "add_key", "request_key", "bpf", "io_uring_setup", "io_uring_enter", "io_uring_register",
		"perf_event_open", "ptrace(PEEKDATA, parent)", "process_vm_readv",
		"mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
		"kexec_load", "init_module", "finit_module", "delete_module",
	} {
		want[name] = "EPERM"
	}
	want["clone3"] = "ENOSYS"
	for _, network := range []bool{false, true} {
		res := mustRun(t, b, Command{Script: "./probe syscalls", Network: network})
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(res.Output), "\n") {
			name, errno, _ := strings.Cut(line, ": ")
			got[name] = errno
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("network %v: errno of each denied call (-want +got):\n%s\noutput:\n%s", network, diff, res.Output)
		}
	}
}

// TestBwrapNoNestedNamespaces checks that the sandbox's commands cannot
// make namespaces of their own (`unshare -Urn` would give them netlink and
// nftables, `unshare -Urm` mount) while ordinary processes and threads
// still start.
func TestBwrapNoNestedNamespaces(t *testing.T) {
	t.Parallel()
	b := newTestBwrap(t, testOptions(t))
	for _, network := range []bool{false, true} {
		for _, script := range []string{"unshare -Urn true", "unshare -Urm true", "unshare -U true", "unshare -n true"} {
			res := mustRun(t, b, Command{Script: script, Network: network})
			if res.ExitCode == 0 || !strings.Contains(res.Output, "Operation not permitted") {
				t.Errorf("network %v: %s: exit %d, %q; want it to fail with EPERM", network, script, res.ExitCode, res.Output)
			}
		}
		res := mustRun(t, b, Command{Script: "(sleep 0 & wait) && echo forked && nproc >/dev/null && echo threads", Network: network})
		if res.Output != "forked\nthreads\n" {
			t.Errorf("network %v: fork: %q", network, res.Output)
		}
	}
}

// TestBwrapDisablesUserNamespaces runs without the seccomp filter to show
// the second wall on its own: bwrap's --disable-userns leaves no user
// namespace to create.
func TestBwrapDisablesUserNamespaces(t *testing.T) {
	t.Parallel()
	b := newTestBwrap(t, testOptions(t))
	b.seccomp = nil
	for _, network := range []bool{false, true} {
		res := mustRun(t, b, Command{Script: "unshare -U true", Network: network})
		if res.ExitCode == 0 || !strings.Contains(res.Output, "No space left on device") {
			t.Errorf("network %v: unshare -U without seccomp: exit %d, %q; want ENOSPC from user.max_user_namespaces", network, res.ExitCode, res.Output)
		}
	}
}

// TestBwrapSeccompCompatABI makes system calls through the i386 ABI
// (int 0x80) on x86_64: the filter checks the architecture, so they fail
// instead of bypassing the x86_64 rules.
func TestBwrapSeccompCompatABI(t *testing.T) {
	t.Parallel()
	if runtime.GOARCH != "amd64" {
		t.Skip("the i386 ABI probe is for x86_64")
	}
	o := testOptions(t)
	probe := buildProbe(t, o.Workspace)
	if out, err := exec.Command(probe, "compat").CombinedOutput(); err != nil || !strings.Contains(string(out), "i386 getpid: ok") {
		t.Skipf("this kernel runs no i386 system calls (int 0x80 outside the sandbox: %v, %.200s)", err, out)
	}
	b := newTestBwrap(t, o)
	res := mustRun(t, b, Command{Script: "./probe compat"})
	want := "i386 getpid: EPERM\ni386 unshare(CLONE_NEWUSER): EPERM\n"
	if res.Output != want {
		t.Errorf("i386 calls in the sandbox: %q, want %q", res.Output, want)
	}
}
