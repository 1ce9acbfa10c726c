// Package sandbox turns the operator's sandbox settings into the sandboxes
// jobs and bot fix run in: the kinds AGENTFIX_SANDBOX names (a map of
// constructors of package workspace, as mini-swe-agent keeps its
// environments), the image cache of the bwrap sandbox, and the startup
// checks that stop a worker on a host where the sandbox cannot run. Every
// error a check returns is a config.Error naming the variable to change.
package sandbox
