package proc

import (
	"bufio"
	"context"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCancelKillsTheGroup starts a shell that leaves a grandchild holding
// the output pipe; cancelling the context must kill the grandchild too, run
// onKill, and let Wait return.
func TestCancelKillsTheGroup(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	killed := make(chan struct{})
	cmd := Command(ctx, func() { close(killed) }, "sh", "-c", `sleep 1000 & echo $!; wait`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the grandchild's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("grandchild pid %q: %v", line, err)
	}
	// A pidfd of the grandchild becomes readable when it exits: the test
	// waits for that event, not for a time.
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd of the grandchild %d: %v", pid, err)
	}
	defer unix.Close(pidfd)
	cancel()
	if err := cmd.Wait(); err == nil {
		t.Error("Wait after cancel returned nil, want the kill's error")
	}
	<-killed
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n != 1 {
			t.Fatalf("wait for the grandchild %d to exit: %d, %v", pid, n, err)
		}
		break
	}
}

// TestExitLeavesNoTimeoutError checks a command that exits on its own is
// not killed and reports its exit code.
func TestExitLeavesNoTimeoutError(t *testing.T) {
	t.Parallel()
	cmd := Command(context.Background(), func() { t.Error("onKill ran for a command that exited") }, "sh", "-c", "exit 3")
	err := cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("Run = %v, exit code %v; want 3", err, cmd.ProcessState)
	}
}
