package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/session"
)

// repoSettings are a job's settings in one repository: the operator's
// configuration with the repository's .github/agent-fix.yml applied
// (DESIGN.md §4, §9). Fix and revise jobs get them from settingsLoader.
type repoSettings struct {
	// Repo is the repository's configuration; config.DefaultRepo when it
	// has no file.
	Repo config.RepoSettings
	// Model is the model the job uses: the repository's, else
	// AGENTFIX_MODEL.
	Model string
	// Limits are the job's limits: the operator's, lowered by the
	// repository's.
	Limits config.JobLimits
	// Capped lists the limits the repository set above the operator's,
	// which therefore do not apply.
	Capped []config.CappedLimit
	// AllowWorkflowChanges lets the change touch .github/workflows/: the
	// operator allows it everywhere or the repository allows it for itself.
	AllowWorkflowChanges bool
}

// agentConfig returns the agent's limits.
func (s repoSettings) agentConfig() agent.Config {
	c := agent.DefaultConfig()
	c.MaxSteps, c.MaxCostUSD, c.MaxDuration = s.Limits.MaxSteps, s.Limits.MaxCostUSD, s.Limits.MaxDuration
	return c
}

// branch is the branch of issue's pull request: the repository's prefix
// (agent-fix/ by default) and issue-<N>.
func (s repoSettings) branch(issue int) string {
	return fmt.Sprintf("%sissue-%d", s.Repo.BranchPrefix, issue)
}

// notes say what of the repository's configuration did not apply, for the
// status comment.
func (s repoSettings) notes() []string {
	var out []string
	for _, c := range s.Capped {
		out = append(out, fmt.Sprintf("%s: %s", config.RepoFile, c))
	}
	return out
}

// session returns the run's settings of the session package.
func (s repoSettings) session() session.Settings {
	return session.Settings{Image: s.Repo.Image, Setup: s.Repo.Setup, Test: s.Repo.Test, Limits: s.agentConfig(),
		AllowWorkflowChanges: s.AllowWorkflowChanges}
}

// settingsLoader reads a repository's settings for its jobs.
type settingsLoader struct {
	inst           Installations
	cfg            *config.App
	allowWorkflows bool
	model          ModelFactory
}

// operator are the settings of a job without the repository's: the
// operator's configuration alone.
func (l *settingsLoader) operator() repoSettings {
	return repoSettings{Repo: config.DefaultRepo(), Model: l.cfg.Model, Limits: l.cfg.JobLimits(),
		AllowWorkflowChanges: l.allowWorkflows}
}

// repoConfigError is a repository configuration a job cannot use. Its
// text is written for the requester, who can fix it.
type repoConfigError struct {
	// Problems lists what is wrong, one a line, each naming its file.
	Problems string
}

func (e *repoConfigError) Error() string { return "invalid repository configuration:\n" + e.Problems }

// load returns the settings of a job in repo: RepoFile from the
// default branch (never another branch), or the owner's .github
// repository's, and the files they extend, each read with a token scoped
// to its repository; then the limits lowered by the repository's, and its
// model checked. A configuration the job cannot use is a *repoConfigError,
// for the requester; a failure to read it is an error to retry.
func (l *settingsLoader) load(ctx context.Context, installation int64, repo ghapp.Repo) (repoSettings, error) {
	files := repoFiles{inst: l.inst, installation: installation, owner: repo.Owner}
	rc, err := config.LoadRepo(ctx, files, repo.Owner, repo.Name)
	var re *config.RepoError
	if errors.As(err, &re) {
		return repoSettings{}, &repoConfigError{Problems: re.Error()}
	}
	if err != nil {
		return repoSettings{}, err
	}
	s := repoSettings{Repo: rc, Model: l.cfg.Model,
		AllowWorkflowChanges: l.allowWorkflows || rc.AllowWorkflowChanges}
	s.Limits, s.Capped = rc.Limits(l.cfg.JobLimits())
	if rc.Model != "" && rc.Model != s.Model {
		if _, err := l.model(rc.Model); err != nil {
			return repoSettings{}, &repoConfigError{Problems: fmt.Sprintf("%s: model: %s cannot be used here: %v", sourceOf(rc), rc.Model, err)}
		}
		s.Model = rc.Model
	}
	return s, nil
}

// sourceOf names the file(s) a configuration came from, for messages.
func sourceOf(rc config.RepoSettings) string {
	if len(rc.Sources) <= 1 {
		return config.RepoFile
	}
	return config.RepoFile + " (with " + strings.Join(rc.Sources[:len(rc.Sources)-1], ", ") + ")"
}

// repoFiles reads configuration files for LoadRepo: from the default
// branch only, each with a token scoped to its repository — of the job's
// installation for a repository of the same owner, of whichever
// installation of the App covers it otherwise. A repository the App cannot
// read counts as absent.
type repoFiles struct {
	inst         Installations
	installation int64
	owner        string
}

func (f repoFiles) GetFile(ctx context.Context, owner, name, path string) ([]byte, bool, error) {
	id := int64(0) // look the installation up
	if strings.EqualFold(owner, f.owner) {
		id = f.installation
	}
	return f.inst.DefaultBranchFile(ctx, id, ghapp.Repo{Owner: owner, Name: name}, path)
}

var _ config.RepoFileGetter = repoFiles{}

// repoLimits are the lines help shows under "Limits in this repository":
// the job limits after the repository's configuration, who it lets in,
// and the daily budgets with today's spend. What cannot be read is left
// out (and logged): help still answers.
func (w *Worker) repoLimits(ctx context.Context, installation int64, repo ghapp.Repo) []string {
	s, err := w.settings.load(ctx, installation, repo)
	var bad *repoConfigError
	switch {
	case errors.As(err, &bad):
		s = w.settings.operator()
	case err != nil:
		w.log.Warn("read the repository's configuration for help", logattr.Repo, repo.String(), logattr.Err, err)
		s = w.settings.operator()
	}
	lines := []string{report.Limits(s.Limits.MaxSteps, s.Limits.MaxCostUSD, s.Limits.MaxDuration)}
	lines = append(lines, s.notes()...)
	var who []string
	for _, u := range s.Repo.AllowedUsers {
		who = append(who, "@"+u)
	}
	for _, t := range s.Repo.AllowedTeams {
		who = append(who, "team "+t)
	}
	if len(who) > 0 {
		lines = append(lines, fmt.Sprintf("%s lets only these people with write access start work: %s", config.RepoFile, strings.Join(who, ", ")))
	}
	usage, err := w.opts.Budget.Spent(ctx, budget.Scope{Installation: installation, Repo: repo.String()})
	if err != nil {
		w.log.Warn("read the budgets for help", logattr.Repo, repo.String(), logattr.Err, err)
	}
	for _, u := range usage {
		if u.Limit.USD == 0 {
			continue
		}
		what := "this repository"
		if u.Kind == budget.KindInstallation {
			what = "all repositories of this installation together"
		}
		lines = append(lines, fmt.Sprintf("%s: %s of model spend per day (UTC), %s spent today", what, report.USD(u.Limit.USD), report.USD(u.Spent.USD)))
	}
	if bad != nil {
		lines = append(lines, fmt.Sprintf("%s on the default branch cannot be used, so no job starts until it is fixed", config.RepoFile))
	}
	return lines
}
