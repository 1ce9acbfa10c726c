package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// int80 makes a system call through the i386 ABI.
func int80(trap, a1, a2, a3 uintptr) (ret uintptr)

// compat makes i386 getpid (20) and unshare (310) calls.
func compat() {
	for _, c := range []struct {
		name    string
		nr, arg uintptr
	}{{"i386 getpid", 20, 0}, {"i386 unshare(CLONE_NEWUSER)", 310, unix.CLONE_NEWUSER}} {
		r := int(int32(int80(c.nr, c.arg, 0, 0)))
		switch {
		case r == -int(unix.EPERM):
			fmt.Printf("%s: EPERM\n", c.name)
		case r < 0:
			fmt.Printf("%s: %s\n", c.name, unix.ErrnoName(unix.Errno(-r)))
		default:
			fmt.Printf("%s: ok\n", c.name)
		}
	}
}
