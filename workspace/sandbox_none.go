package workspace

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
)

// None runs commands directly on the worker, in the working copy's host
// directory, with the sandbox environment and resource limits but no
// isolation: the command can read the worker's files and use the network
// (Command.Network is not enforced), and /workspace does not exist (the
// working copy keeps its host path). It is for development only and cannot
// be constructed unless Options.AllowUnsandboxed is true.
type None struct {
	opts    Options
	prlimit string
	pathDir []string
}

// NewNone returns the unsandboxed runner, or an error unless
// o.AllowUnsandboxed is true.
func NewNone(o Options) (*None, error) {
	if !o.AllowUnsandboxed {
		return nil, fmt.Errorf("the none sandbox runs the agent's commands unisolated on this machine; set AGENTFIX_ALLOW_UNSANDBOXED=true to allow it")
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		return nil, fmt.Errorf("none sandbox: %w (install util-linux)", err)
	}
	n := &None{opts: o, prlimit: prlimit, pathDir: o.ExtraPath}
	if root := goRoot(); root != "" {
		n.pathDir = append(n.pathDir, filepath.Join(root, "bin"))
	}
	return n, nil
}

// Close does nothing: None holds nothing between commands. It is here so
// every sandbox can be closed alike.
func (n *None) Close() error { return nil }

// Run runs c with bash in the working copy. See Command and Result.
func (n *None) Run(ctx context.Context, c Command) (res Result, err error) {
	defer func() { n.opts.logRun("none", c, res, err) }()
	if err := n.opts.checkAlive(); err != nil {
		return Result{}, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = n.opts.Timeout
	}
	argv := append(prlimitArgs(n.prlimit, n.opts.Limits, nil), "bash", "-c", c.Script)
	res, err = runProcess(ctx, process{
		argv: argv,
		env:  sandboxEnv(n.opts.Cache, n.pathDir, true, n.opts.Env),
		dir:  n.opts.Workspace,
	}, timeout, n.opts.OutputLimit)
	if err != nil {
		return res, fmt.Errorf("none: %w", err)
	}
	if err := n.opts.checkDisk(); err != nil {
		return res, err
	}
	return res, nil
}
