// Package devcontainer reads a repository's Dev Container configuration
// (.devcontainer/devcontainer.json or .devcontainer.json, JSON with
// comments and trailing commas) for what a sandbox without a container
// daemon can honour: the image, the onCreateCommand, updateContentCommand
// and postCreateCommand lifecycle commands as setup, and containerEnv and
// remoteEnv as environment. A configuration that needs an image built
// (build, dockerFile, Docker Compose) or features added is unsupported,
// with a one-line reason, and the run goes on with the next source.
//
// Choose is the pure decision of where a job's environment comes from:
// image: in .github/agent-fix.yml, the devcontainer image, the operator's
// AGENTFIX_SANDBOX_IMAGE, else the worker's own root — with the notes the
// status comment shows.
//
// Nothing here reads the worker's environment: ${localEnv:…} becomes its
// default or nothing, with a note. The package imports nothing from the
// project.
package devcontainer
