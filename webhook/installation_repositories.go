package webhook

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentfix/agentfix/jobs"
)

// InstallationRepositories handles installation_repositories: repositories
// removed from the installation get their jobs cancelled.
type InstallationRepositories struct{}

// installationRepositoriesEvent is what routing reads of an
// installation_repositories payload.
type installationRepositoriesEvent struct {
	Action              string          `json:"action"`
	Installation        installationRef `json:"installation"`
	RepositoriesRemoved []repository    `json:"repositories_removed"`
}

func (h *InstallationRepositories) decide(d delivery, body []byte) (decision, error) {
	var ev installationRepositoriesEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return decision{}, err
	}
	id := ev.Installation.ID
	if id == 0 {
		return ignored("no installation in the payload"), nil
	}
	if ev.Action != "removed" {
		return ignored("installation_repositories action %s needs nothing", ev.Action), nil
	}
	if err := checkInstallation(id); err != nil {
		return decision{}, err
	}
	var repos []jobs.Repo
	for _, r := range ev.RepositoriesRemoved {
		repo := toRepo(r)
		if err := checkRepo(repo); err != nil {
			return decision{}, fmt.Errorf("repositories_removed: %w", err)
		}
		if repo.Owner == "" {
			repo.Owner, _, _ = strings.Cut(repo.FullName, "/")
		}
		repos = append(repos, repo)
	}
	if len(repos) == 0 {
		return ignored("no repositories removed"), nil
	}
	return decision{cancel: &jobs.Cancel{DeliveryID: d.id, Installation: id, Reason: jobs.CancelRepositoriesRemoved, Repos: repos}}, nil
}

var _ eventHandler = (*InstallationRepositories)(nil)
