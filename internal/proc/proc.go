// Package proc starts the child processes of the bot — git, the sandboxes,
// the test servers — the one way: in a process group of their own, the
// whole group killed when their context ends, and a bounded wait for the
// pipes after that. A plain exec.CommandContext kills only the direct
// child, so a grandchild holding the output pipe open hangs the caller.
package proc

import (
	"context"
	"os/exec"
	"syscall"
	"time"
)

// WaitDelay is how long Wait waits, once the group was killed or the
// process exited, for the output pipes to close before it closes them.
const WaitDelay = 5 * time.Second

// Command returns argv ready to start in a process group of its own,
// which is killed as a whole (SIGKILL) when ctx ends; onKill, when not
// nil, runs after that kill (the docker sandbox removes its container
// there). Set the command's Env, Dir and I/O as usual before starting it.
func Command(ctx context.Context, onKill func(), argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		KillGroup(cmd.Process.Pid)
		if onKill != nil {
			onKill()
		}
		return nil
	}
	cmd.WaitDelay = WaitDelay
	return cmd
}

// KillGroup sends SIGKILL to process group pgid; a group that is already
// gone is not an error.
func KillGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
