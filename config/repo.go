package config

import (
	"time"
)

// RepoFile is the path of the per-repository configuration file, read from
// the default branch only (DESIGN.md §9).
const RepoFile = ".github/agent-fix.yml"

// DefaultBranchPrefix starts the name of every branch the bot pushes when
// the repository sets no branch_prefix.
const DefaultBranchPrefix = "agent-fix/"

// Limits on the size of a repository's configuration; larger values are
// errors, not truncated.
const (
	maxRepoFileBytes    = 64 << 10
	maxSetupCommands    = 20
	maxCommandLen       = 4000
	maxInstructionsLen  = 10000
	maxListEntries      = 100
	maxBranchPrefixLen  = 100
	maxGitHubLabelRunes = 50
)

// RepoSettings is a repository's own configuration of the bot: the keys of
// RepoFile, merged over the files it extends (or the organization's
// defaults), with defaults filled in. The yaml tags name the keys; decoding
// is done key by key (see repoKeys) so each problem names its key.
type RepoSettings struct {
	// Extends is the raw _extends value of the repository's own file (or of
	// the organization's file when that applied): "[owner/]repo[:path]".
	// ParseRepo leaves it unresolved; LoadRepo resolves it.
	Extends string `yaml:"_extends"`
	// Image is the container image the job's commands run in (any OCI
	// reference, by tag or digest); it wins over a devcontainer.json and
	// the operator's AGENTFIX_SANDBOX_IMAGE. Empty means none named.
	Image string `yaml:"image"`
	// Setup lists commands run in the sandbox, with the network on, before
	// the agent starts, in order (a single string in the file is a list of
	// one).
	Setup []string `yaml:"setup"`
	// Test is the command the harness runs in the review phase; its result
	// goes into the review message and the PR body and decides ready vs
	// draft. Empty means none.
	Test string `yaml:"test"`
	// Instructions are added to the agent's prompt.
	Instructions string `yaml:"instructions"`
	// Model is "provider/model"; empty means the operator's model.
	Model string `yaml:"model"`
	// MaxSteps, MaxCostUSD and MaxDuration can only lower the operator's
	// per-job limits (see Limits); zero means the operator's.
	MaxSteps    int           `yaml:"max_steps"`
	MaxCostUSD  float64       `yaml:"max_cost_usd"`
	MaxDuration time.Duration `yaml:"max_duration"`
	// Draft makes every pull request a draft, even a passing one.
	Draft bool `yaml:"draft"`
	// AllowedUsers and AllowedTeams ("org/team-slug") narrow who may
	// trigger the bot among the users with write access; both empty means
	// anyone with write access (see MayTrigger).
	AllowedUsers []string `yaml:"allowed_users"`
	AllowedTeams []string `yaml:"allowed_teams"`
	// AllowWorkflowChanges lets a diff touch .github/workflows/.
	AllowWorkflowChanges bool `yaml:"allow_workflow_changes"`
	// BranchPrefix starts the bot's branch names, e.g. "agent-fix/" gives
	// "agent-fix/issue-12".
	BranchPrefix string `yaml:"branch_prefix"`
	// Labels are added to the bot's pull requests.
	Labels []string `yaml:"labels"`
	// TestPolicy says what the bot's pull requests must prove with tests.
	TestPolicy TestPolicy `yaml:"test_policy"`
	// CI is how the bot keeps its own pull requests green: rounds started
	// by failing checks and by conflicts with the base branch (the ci
	// key; see CISettings).
	CI CISettings `yaml:"ci"`

	// Sources names the files the configuration was read from, the base
	// first, as "owner/repo:path" (empty when no file applied).
	Sources []string `yaml:"-"`
}

// TestPolicy is the test_policy key.
type TestPolicy struct {
	// Regression is required (a pull request without a proven regression
	// test is a draft), encouraged (it is noted; the default, "") or off.
	Regression string `yaml:"regression"`
}

// DefaultRepo returns the configuration of a repository without a file.
func DefaultRepo() RepoSettings {
	return RepoSettings{BranchPrefix: DefaultBranchPrefix, CI: DefaultCI()}
}

// ParseRepo decodes one RepoFile on its own, over DefaultRepo: unknown
// keys, values of the wrong type or out of range, and YAML syntax errors are
// all reported in one *RepoError naming the file, line and key of each
// problem. An _extends key is kept in Extends, not resolved (LoadRepo does
// that).
func ParseRepo(data []byte) (RepoSettings, error) {
	f, problems := parseRepoFile(RepoFile, "", data)
	if len(problems) > 0 {
		return RepoSettings{}, &RepoError{Problems: problems}
	}
	r := DefaultRepo()
	f.apply(&r)
	r.Extends = f.extends
	return r, nil
}
