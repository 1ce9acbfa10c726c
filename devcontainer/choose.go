package devcontainer

import (
	"errors"
	"fmt"
	"strings"
)

// Source is where a job's environment comes from.
type Source int

// The sources, in the order Choose tries them (the worker's own root
// last).
const (
	// SourceWorker: the worker's own root filesystem, as before images.
	SourceWorker Source = iota
	// SourceRepoConfig: image: in .github/agent-fix.yml.
	SourceRepoConfig
	// SourceDevcontainer: the image of the repository's devcontainer.json.
	SourceDevcontainer
	// SourceOperator: the operator's AGENTFIX_SANDBOX_IMAGE.
	SourceOperator
	// SourceOverride: an image the person running the job named for it
	// (bot fix --image); it wins over every other source.
	SourceOverride
)

// RepoConfigFile is the per-repository configuration file whose image:
// wins over everything.
const RepoConfigFile = ".github/agent-fix.yml"

// Inputs are what Choose weighs.
type Inputs struct {
	// Override is an image named for this run only (bot fix --image), or
	// "": it wins over everything.
	Override string
	// RepoImage is image: of .github/agent-fix.yml, or "".
	RepoImage string
	// Devcontainer and DevcontainerErr are what Load returned.
	Devcontainer    *Config
	DevcontainerErr error
	// OperatorImage is AGENTFIX_SANDBOX_IMAGE, or "".
	OperatorImage string
}

// Choice is the environment of a job and what to tell people about it.
type Choice struct {
	Source Source
	// Image is the reference to pull, or "" for SourceWorker.
	Image string
	// Devcontainer is set for SourceDevcontainer: its Setup runs before
	// the repository's setup and its Environ is the sandbox's environment.
	Devcontainer *Config
	// Notes are lines for the status comment: sources passed over and
	// why, and what of the chosen devcontainer.json is not applied.
	Notes []string
}

// Choose picks the environment: an override, then the first of image: in
// .github/agent-fix.yml, the devcontainer.json's image, the operator's
// image, and else the worker's own root. A devcontainer.json that cannot
// be used (it needs a build, or does not parse) is passed over with a
// note, and so is one that a repository image overrides.
func Choose(in Inputs) Choice {
	if o := strings.TrimSpace(in.Override); o != "" {
		return Choice{Source: SourceOverride, Image: o}
	}
	var notes []string
	repoImage := strings.TrimSpace(in.RepoImage)
	var u *UnsupportedError
	switch {
	case repoImage != "":
		// The dev container would not be used whatever it says.
		if in.Devcontainer != nil || errors.As(in.DevcontainerErr, &u) {
			var path string
			if in.Devcontainer != nil {
				path = in.Devcontainer.Path
			} else {
				path = u.Path
			}
			notes = append(notes, fmt.Sprintf("`%s` is not used: `%s` names an image.", path, RepoConfigFile))
		}
	case errors.As(in.DevcontainerErr, &u):
		notes = append(notes, u.Error()+".")
	case in.DevcontainerErr != nil:
		notes = append(notes, fmt.Sprintf("The dev container is not used: %v.", in.DevcontainerErr))
	}
	switch {
	case repoImage != "":
		return Choice{Source: SourceRepoConfig, Image: repoImage, Notes: notes}
	case in.DevcontainerErr == nil && in.Devcontainer != nil:
		return Choice{Source: SourceDevcontainer, Image: in.Devcontainer.Image, Devcontainer: in.Devcontainer, Notes: append(notes, in.Devcontainer.Notes...)}
	case strings.TrimSpace(in.OperatorImage) != "":
		return Choice{Source: SourceOperator, Image: strings.TrimSpace(in.OperatorImage), Notes: notes}
	}
	return Choice{Source: SourceWorker, Notes: notes}
}

// Describe names the environment for the status comment, the check run
// and the pull request body; pinned is the image as repository@digest
// once pulled (rootfs.Root.Pinned), ignored for SourceWorker.
func (c Choice) Describe(pinned string) string {
	switch c.Source {
	case SourceRepoConfig:
		return fmt.Sprintf("image `%s` (`%s`), named in `%s`", c.Image, pinned, RepoConfigFile)
	case SourceDevcontainer:
		return fmt.Sprintf("image `%s` (`%s`), named in `%s`", c.Image, pinned, c.Devcontainer.Path)
	case SourceOperator:
		return fmt.Sprintf("image `%s` (`%s`), the operator's default", c.Image, pinned)
	case SourceOverride:
		return fmt.Sprintf("image `%s` (`%s`), named for this run", c.Image, pinned)
	}
	return "the worker's own system (no image named)"
}
