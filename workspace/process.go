package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Grace periods of a command's end. They bound how long the worker waits
// for a killed process to be reaped and for the output pipe to drain.
const (
	waitDelay  = 5 * time.Second
	drainDelay = 2 * time.Second
)

// process is one sandboxed command as the host runs it.
type process struct {
	argv       []string
	env        []string
	dir        string
	extraFiles []*os.File
	// cgroup, when set, is the directory of a cgroup v2 the process is
	// cloned into (it runs nowhere else, not even for an instruction).
	cgroup *os.File
	// onKill runs after the process group was killed on timeout or cancel
	// (the docker sandbox removes its container there).
	onKill func()
}

// runProcess runs p in its own process group with stdin empty, stdout and
// stderr into one head+tail buffer, and kills the whole group when the
// command ends, times out or ctx is cancelled. It returns ctx's error when
// ctx ends first, and an error wrapping ErrSandboxDead when the process
// cannot start.
func runProcess(ctx context.Context, p process, timeout time.Duration, outLimit int) (Result, error) {
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	pr, pw, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("output pipe: %w", err)
	}
	defer pr.Close()

	cmd := exec.CommandContext(runCtx, p.argv[0], p.argv[1:]...)
	cmd.Env = p.env
	cmd.Dir = p.dir
	cmd.Stdout = pw
	cmd.Stderr = pw
	cmd.ExtraFiles = p.extraFiles
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if p.cgroup != nil {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(p.cgroup.Fd())
	}
	cmd.Cancel = func() error {
		killGroup(cmd.Process.Pid)
		if p.onKill != nil {
			p.onKill()
		}
		return nil
	}
	cmd.WaitDelay = waitDelay

	buf := NewHeadTail(outLimit)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		pw.Close()
		return Result{}, fmt.Errorf("%w: start %s: %w", ErrSandboxDead, p.argv[0], err)
	}
	pw.Close()
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		io.Copy(buf, pr)
	}()

	waitErr := cmd.Wait()
	// Background processes the command left behind die with it.
	killGroup(cmd.Process.Pid)
	select {
	case <-copied:
	case <-time.After(drainDelay):
		// A process that left the group still holds the pipe.
		pr.SetReadDeadline(time.Now())
		<-copied
	}

	res := Result{Output: buf.String(), Elided: buf.Elided(), Duration: time.Since(start)}
	if ctx.Err() != nil {
		return res, fmt.Errorf("run command: %w", context.Cause(ctx))
	}
	if runCtx.Err() != nil {
		res.TimedOut = true
		res.ExitCode = -1
		return res, nil
	}
	res.ExitCode = exitCode(cmd.ProcessState)
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return res, fmt.Errorf("%w: wait for %s: %w", ErrSandboxDead, p.argv[0], waitErr)
	}
	return res, nil
}

// killGroup sends SIGKILL to the process group pgid; a group that is
// already gone is not an error.
func killGroup(pgid int) {
	syscall.Kill(-pgid, syscall.SIGKILL)
}

// exitCode returns the exit status like a shell does: 128+n for a signal n.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
