package webhook

import (
	"strings"

	"github.com/agentfix/agentfix/jobs"
	"github.com/google/go-github/v66/github"
)

// InstallationRepositories handles installation_repositories: repositories
// removed from the installation get their jobs cancelled.
type InstallationRepositories struct{}

func (h *InstallationRepositories) decide(d delivery, payload any) decision {
	ev := payload.(*github.InstallationRepositoriesEvent)
	id := ev.GetInstallation().GetID()
	if id == 0 {
		return ignored("no installation in the payload")
	}
	if ev.GetAction() != "removed" {
		return ignored("installation_repositories action %s needs nothing", ev.GetAction())
	}
	var repos []jobs.Repo
	for _, r := range ev.RepositoriesRemoved {
		repo := toRepo(r)
		if repo.Owner == "" {
			repo.Owner, _, _ = strings.Cut(repo.FullName, "/")
		}
		repos = append(repos, repo)
	}
	if len(repos) == 0 {
		return ignored("no repositories removed")
	}
	return decision{cancel: &jobs.Cancel{DeliveryID: d.id, Installation: id, Reason: jobs.CancelRepositoriesRemoved, Repos: repos}}
}

var _ eventHandler = (*InstallationRepositories)(nil)
