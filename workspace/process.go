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

	"github.com/agentfix/agentfix/internal/proc"
)

// drainDelay bounds how long the worker waits, once a command's process
// group is gone, for the output pipe to drain.
const drainDelay = 2 * time.Second

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
	// started, when set, runs once the process started, with the timeout's
	// context and the process's pid (bwrap's setup network attaches its NAT
	// there); an error kills the process group and the command is dead.
	started func(ctx context.Context, pid int) error
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

	cmd := proc.Command(runCtx, p.onKill, p.argv...)
	if p.cgroup != nil {
		// The process starts in the job's cgroup (cgroup v2).
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(p.cgroup.Fd())
	}
	cmd.Env = p.env
	cmd.Dir = p.dir
	cmd.Stdout = pw
	cmd.Stderr = pw
	cmd.ExtraFiles = p.extraFiles

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

	var startErr error
	if p.started != nil {
		if startErr = p.started(runCtx, cmd.Process.Pid); startErr != nil {
			proc.KillGroup(cmd.Process.Pid)
		}
	}
	waitErr := cmd.Wait()
	// Background processes the command left behind die with it.
	proc.KillGroup(cmd.Process.Pid)
	select {
	case <-copied:
	case <-time.After(drainDelay):
		// A process that left the group still holds the pipe.
		pr.SetReadDeadline(time.Now())
		<-copied
	}

	res := Result{Output: buf.String(), Elided: buf.Elided(), Duration: time.Since(start)}
	if startErr != nil && runCtx.Err() == nil {
		return res, fmt.Errorf("%w: %w", ErrSandboxDead, startErr)
	}
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

// exitCode returns the exit status like a shell does: 128+n for a signal n.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
