package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// RepoFile is the path of the per-repository configuration file.
const RepoFile = ".github/agent-fix.yml"

// Repo is a repository's own configuration, read from RepoFile on its
// default branch.
type Repo struct {
	// Setup lists commands run in the sandbox, with the network on, before
	// the agent starts.
	Setup []string `yaml:"setup"`
	// Test is the command the harness runs in the review phase.
	Test string `yaml:"test"`
	// Instructions are added to the agent's prompt.
	Instructions string `yaml:"instructions"`
}

// ParseRepo decodes a RepoFile. Unknown keys and values of the wrong type
// are errors.
func ParseRepo(data []byte) (Repo, error) {
	var r Repo
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&r); err != nil && !errors.Is(err, io.EOF) {
		return Repo{}, fmt.Errorf("%s: %w", RepoFile, err)
	}
	return r, nil
}
