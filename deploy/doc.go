// Package deploy holds the deployment files of agentfix — the container
// image (Dockerfile), the default sandbox image (sandbox.Dockerfile), Docker Compose, Kubernetes manifests and the Grafana
// dashboard — and the tests that parse them and check the fields that
// matter: probes, resources, secrets, grace periods, the Redis settings and
// the configuration variables each process receives. It has no code of its
// own; README.md explains how to deploy.
package deploy
