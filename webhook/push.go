package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentfix/agentfix/jobs"
)

// Push handles push: a push to a repository's default branch asks the
// worker to look at the bot's open pull requests into that branch, and to
// start a conflict round on each that no longer merges. Pushes to other
// branches, and deleted branches, ask nothing. Whoever pushed — a person,
// a merge queue, another App — the base moved all the same.
type Push struct{}

// pushEvent is what routing reads of a push payload. Its repository is
// the one of every event, with the default branch.
type pushEvent struct {
	Ref          string          `json:"ref"`
	After        string          `json:"after"`
	Deleted      bool            `json:"deleted"`
	Installation installationRef `json:"installation"`
	Repository   repository      `json:"repository"`
}

// zeroSHA is the commit id of a branch that no longer exists.
var zeroSHA = strings.Repeat("0", 40)

func (h *Push) decide(d delivery, body []byte) (decision, error) {
	var ev pushEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return decision{}, err
	}
	repo := toRepo(ev.Repository)
	branch, isBranch := strings.CutPrefix(ev.Ref, "refs/heads/")
	switch {
	case ev.Installation.ID == 0:
		return ignored("no installation in the payload (not a GitHub App delivery)"), nil
	case !isBranch:
		return ignored("push to %s, not to a branch", truncate(ev.Ref, 100)), nil
	case repo.DefaultBranch == "" || branch != repo.DefaultBranch:
		return ignored("push to %s, not to the default branch %s", truncate(branch, 100), truncate(repo.DefaultBranch, 100)), nil
	case ev.Deleted || ev.After == zeroSHA:
		return ignored("the push deleted %s", truncate(branch, 100)), nil
	}
	errs := []error{checkInstallation(ev.Installation.ID), checkRepo(repo)}
	if !fullSHA.MatchString(ev.After) {
		errs = append(errs, fmt.Errorf("after %q is not a commit id", truncate(ev.After, 80)))
	}
	if err := errors.Join(errs...); err != nil {
		return decision{}, err
	}
	return decision{baseMoved: &jobs.BaseMoved{
		DeliveryID: d.id, Installation: ev.Installation.ID, Repo: repo, Branch: branch, After: ev.After,
	}}, nil
}

var _ eventHandler = (*Push)(nil)
