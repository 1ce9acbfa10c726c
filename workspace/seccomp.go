package workspace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM in the sandbox: namespaces (setns; unshare
// and clone with a namespace flag are conditional below), the kernel
// keyring, eBPF, io_uring, perf events, other processes' memory and
// tracing, every way to mount, kexec and kernel modules. Names an
// architecture does not have are skipped.
var deniedSyscalls = []string{
	"setns",
	"keyctl", "add_key", "request_key",
	"bpf",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"perf_event_open",
	"ptrace", "process_vm_readv", "process_vm_writev",
	"mount", "umount", "umount2", "pivot_root", "move_mount", "open_tree", "open_tree_attr",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module",
}

// namespaceFlags are the CLONE_NEW* flags; unshare and clone fail with
// EPERM when any is set (CLONE_NEWTIME only exists for unshare and clone3:
// in clone's flags its bit is part of the exit signal).
const (
	cloneNamespaceFlags   = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
	unshareNamespaceFlags = cloneNamespaceFlags | unix.CLONE_NEWTIME
)

// seccompProgram compiles the sandbox's seccomp filter for the
// architecture the worker was built for, as the array of struct
// sock_filter that bwrap's --seccomp reads.
//
// The filter is an allow-list of every system call the library's table
// knows for this architecture, less deniedSyscalls (EPERM), unshare and
// clone with a namespace flag (EPERM) and clone3 (ENOSYS: its flags sit
// in memory a filter cannot read, and ENOSYS makes glibc fall back to
// clone). The default, for anything the table does not list, is EPERM:
// that covers system calls newer than the table and every call made
// through another ABI of the same CPU — the filter checks the audit
// architecture, so i386 calls (int 0x80) on x86_64 and 32-bit arm calls
// on arm64 fail, and x32 calls fail with ENOSYS. 32-bit programs
// therefore cannot run in the sandbox.
func seccompProgram() ([]byte, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w (the sandbox supports x86_64 and arm64)", err)
	}
	denied := map[string]bool{"clone3": true, "clone": true, "unshare": true}
	var deny []string
	for _, name := range deniedSyscalls {
		if _, ok := info.SyscallNames[name]; ok {
			deny = append(deny, name)
			denied[name] = true
		}
	}
	var allow []string
	for name := range info.SyscallNames {
		if !denied[name] {
			allow = append(allow, name)
		}
	}
	// Lower numbers are the common calls (read, write, mmap …); the
	// kernel caches the verdicts that do not depend on arguments anyway.
	slices.SortFunc(allow, func(a, b string) int { return info.SyscallNames[a] - info.SyscallNames[b] })
	withoutFlags := func(name string, flags uint64) []seccomp.NameWithConditions {
		return []seccomp.NameWithConditions{{Name: name, Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.BitsNotSet, Value: flags},
		}}}
	}
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionErrno,
		Syscalls: []seccomp.SyscallGroup{
			{Names: deny, Action: seccomp.ActionErrno},
			// SECCOMP_RET_ERRNO carries the errno in its low bits.
			{Names: []string{"clone3"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
			{Names: allow, Action: seccomp.ActionAllow},
			// The conditional groups come last, one call each: after an
			// argument check fails, go-seccomp-bpf v1.6.0 compares the
			// next group's system call numbers with the loaded argument
			// instead of the number. Here a failed check can only reach
			// the next group with flags that have a namespace bit (never
			// equal to clone's number) and then the default, EPERM.
			{NamesWithCondtions: withoutFlags("unshare", unshareNamespaceFlags), Action: seccomp.ActionAllow},
			{NamesWithCondtions: withoutFlags("clone", cloneNamespaceFlags), Action: seccomp.ActionAllow},
		},
	}
	insns, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	raw, err := bpf.Assemble(insns)
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	var b bytes.Buffer
	for _, ins := range raw {
		binary.Write(&b, binary.NativeEndian, struct {
			Op     uint16
			Jt, Jf uint8
			K      uint32
		}{ins.Op, ins.Jt, ins.Jf, ins.K})
	}
	return b.Bytes(), nil
}
