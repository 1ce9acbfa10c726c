// Command probe runs inside the sandbox's tests: it dials addresses and
// makes the system calls the seccomp filter denies, and prints what
// happened. It is built by the tests, not by `go build ./...`.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	switch os.Args[1] {
	case "dial":
		c, err := net.DialTimeout(os.Args[2], os.Args[3], 20*time.Second)
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(1)
		}
		c.Close()
		fmt.Println("connected")
	case "syscalls":
		syscalls()
	case "compat":
		compat()
	}
}

// syscalls makes each denied call with arguments that do no harm when it
// is allowed, and prints its errno.
func syscalls() {
	empty, _ := unix.BytePtrFromString("")
	name, _ := unix.BytePtrFromString("agentfix")
	tmp, _ := unix.BytePtrFromString("/tmp")
	ppid := uintptr(os.Getppid())
	calls := []struct {
		name string
		nr   uintptr
		args [6]uintptr
	}{
		{"unshare(CLONE_NEWUSER)", unix.SYS_UNSHARE, [6]uintptr{unix.CLONE_NEWUSER}},
		{"unshare(CLONE_NEWNET)", unix.SYS_UNSHARE, [6]uintptr{unix.CLONE_NEWNET}},
		{"clone(CLONE_NEWUSER)", unix.SYS_CLONE, [6]uintptr{unix.CLONE_NEWUSER | uintptr(syscall.SIGCHLD)}},
		{"setns", unix.SYS_SETNS, [6]uintptr{^uintptr(0), 0}},
		{"keyctl", unix.SYS_KEYCTL, [6]uintptr{unix.KEYCTL_GET_KEYRING_ID, ^uintptr(2), 0}},
		{"add_key", unix.SYS_ADD_KEY, [6]uintptr{uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(name)), 0, 0, ^uintptr(2)}},
		{"request_key", unix.SYS_REQUEST_KEY, [6]uintptr{uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(name)), 0, 0}},
		{"bpf", unix.SYS_BPF, [6]uintptr{^uintptr(0), 0, 0}},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, [6]uintptr{0, 0}},
		{"io_uring_enter", unix.SYS_IO_URING_ENTER, [6]uintptr{^uintptr(0), 0, 0, 0, 0, 0}},
		{"io_uring_register", unix.SYS_IO_URING_REGISTER, [6]uintptr{^uintptr(0), 0, 0, 0}},
		{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, [6]uintptr{0, 0, ^uintptr(0), ^uintptr(0), 0}},
		{"ptrace(PEEKDATA, parent)", unix.SYS_PTRACE, [6]uintptr{unix.PTRACE_PEEKDATA, ppid, 0, 0}},
		{"process_vm_readv", unix.SYS_PROCESS_VM_READV, [6]uintptr{ppid, 0, 0, 0, 0, 0}},
		{"mount", unix.SYS_MOUNT, [6]uintptr{uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(tmp)), uintptr(unsafe.Pointer(name)), 0, 0}},
		{"umount2", unix.SYS_UMOUNT2, [6]uintptr{uintptr(unsafe.Pointer(tmp)), 0}},
		{"pivot_root", unix.SYS_PIVOT_ROOT, [6]uintptr{uintptr(unsafe.Pointer(tmp)), uintptr(unsafe.Pointer(tmp))}},
		{"open_tree", unix.SYS_OPEN_TREE, [6]uintptr{^uintptr(99), uintptr(unsafe.Pointer(tmp)), 0}},
		{"move_mount", unix.SYS_MOVE_MOUNT, [6]uintptr{^uintptr(0), uintptr(unsafe.Pointer(empty)), ^uintptr(0), uintptr(unsafe.Pointer(empty)), 0}},
		{"fsopen", unix.SYS_FSOPEN, [6]uintptr{uintptr(unsafe.Pointer(name)), 0}},
		{"fsconfig", unix.SYS_FSCONFIG, [6]uintptr{^uintptr(0), 0, 0, 0, 0}},
		{"fsmount", unix.SYS_FSMOUNT, [6]uintptr{^uintptr(0), 0, 0}},
		{"fspick", unix.SYS_FSPICK, [6]uintptr{^uintptr(99), uintptr(unsafe.Pointer(tmp)), 0}},
		{"kexec_load", unix.SYS_KEXEC_LOAD, [6]uintptr{0, 0, 0, 0}},
		{"init_module", unix.SYS_INIT_MODULE, [6]uintptr{0, 0, uintptr(unsafe.Pointer(empty))}},
		{"finit_module", unix.SYS_FINIT_MODULE, [6]uintptr{^uintptr(0), uintptr(unsafe.Pointer(empty)), 0}},
		{"delete_module", unix.SYS_DELETE_MODULE, [6]uintptr{uintptr(unsafe.Pointer(name)), 0}},
		{"clone3", unix.SYS_CLONE3, [6]uintptr{0, 0}},
	}
	for _, c := range calls {
		r, _, errno := unix.RawSyscall6(c.nr, c.args[0], c.args[1], c.args[2], c.args[3], c.args[4], c.args[5])
		if c.nr == unix.SYS_CLONE && r == 0 && errno == 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0) // the child
		}
		fmt.Printf("%s: %s\n", c.name, errnoName(errno))
	}
}

func errnoName(e syscall.Errno) string {
	switch {
	case e == 0:
		return "ok"
	case errors.Is(e, unix.EPERM):
		return "EPERM"
	case errors.Is(e, unix.ENOSYS):
		return "ENOSYS"
	}
	return unix.ErrnoName(e)
}
