// Package deploy holds the deployment files of agentfix — the container
// image (Dockerfile), the default sandbox image (sandbox.Dockerfile),
// Docker Compose, Kubernetes manifests and the Grafana dashboard — and the
// tests that parse them and check the fields that matter: probes,
// resources, secrets, grace periods, the Redis settings, the configuration
// variables each process receives, and the sandbox image's pins and tools.
// It has no code of its own; README.md explains how to deploy.
package deploy
