package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// problems returns the lines of a *RepoError, or fails the test.
func problemLines(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	re, ok := err.(*RepoError)
	if !ok {
		t.Fatalf("error %T %v, want *RepoError", err, err)
	}
	return strings.Split(re.Error(), "\n")
}

func TestParseRepoValid(t *testing.T) {
	def := DefaultRepo()
	with := func(f func(r *RepoSettings)) RepoSettings {
		r := DefaultRepo()
		f(&r)
		return r
	}
	tests := []struct {
		name string
		yaml string
		want RepoSettings
	}{
		{"empty file", "", def},
		{"only comments", "# nothing yet\n", def},
		{"explicit null document", "~\n", def},
		{"setup list", "setup:\n  - go mod download\n  - make deps\n", with(func(r *RepoSettings) { r.Setup = []string{"go mod download", "make deps"} })},
		{"setup single string", "setup: npm ci\n", with(func(r *RepoSettings) { r.Setup = []string{"npm ci"} })},
		{"setup empty list", "setup: []\n", with(func(r *RepoSettings) { r.Setup = []string{} })},
		{"test", "test: go test ./...\n", with(func(r *RepoSettings) { r.Test = "go test ./..." })},
		{"image by tag", "image: golang:1.26\n", with(func(r *RepoSettings) { r.Image = "golang:1.26" })},
		{"image by digest", "image: ghcr.io/octo/env@sha256:" + strings.Repeat("ab", 32) + "\n", with(func(r *RepoSettings) { r.Image = "ghcr.io/octo/env@sha256:" + strings.Repeat("ab", 32) })},
		{"instructions block", "instructions: |\n  Use tabs.\n  Never touch vendor/.\n", with(func(r *RepoSettings) { r.Instructions = "Use tabs.\nNever touch vendor/.\n" })},
		{"model", "model: anthropic/claude-sonnet-4-5\n", with(func(r *RepoSettings) { r.Model = "anthropic/claude-sonnet-4-5" })},
		{"max_steps", "max_steps: 30\n", with(func(r *RepoSettings) { r.MaxSteps = 30 })},
		{"max_cost_usd float", "max_cost_usd: 1.5\n", with(func(r *RepoSettings) { r.MaxCostUSD = 1.5 })},
		{"max_cost_usd integer", "max_cost_usd: 2\n", with(func(r *RepoSettings) { r.MaxCostUSD = 2 })},
		{"max_duration", "max_duration: 1h30m\n", with(func(r *RepoSettings) { r.MaxDuration = 90 * time.Minute })},
		{"draft", "draft: true\n", with(func(r *RepoSettings) { r.Draft = true })},
		{"test_policy", "test_policy:\n  regression: required\n", with(func(r *RepoSettings) { r.TestPolicy.Regression = "required" })},
		{"draft false", "draft: false\n", def},
		{"allowed_users with and without @", "allowed_users: [alice, \"@Bob-2\"]\n", with(func(r *RepoSettings) { r.AllowedUsers = []string{"alice", "Bob-2"} })},
		{"allowed_teams lower-cased", "allowed_teams: [Acme/Core-Maintainers, \"@acme/bots\"]\n", with(func(r *RepoSettings) { r.AllowedTeams = []string{"acme/core-maintainers", "acme/bots"} })},
		{"allow_workflow_changes", "allow_workflow_changes: true\n", with(func(r *RepoSettings) { r.AllowWorkflowChanges = true })},
		{"branch_prefix with slash", "branch_prefix: bots/fix/\n", with(func(r *RepoSettings) { r.BranchPrefix = "bots/fix/" })},
		{"branch_prefix with dash", "branch_prefix: bot-\n", with(func(r *RepoSettings) { r.BranchPrefix = "bot-" })},
		{"labels", "labels: [bot, \"needs review\"]\n", with(func(r *RepoSettings) { r.Labels = []string{"bot", "needs review"} })},
		{"_extends kept unresolved", "_extends: .github\ntest: make\n", with(func(r *RepoSettings) { r.Extends, r.Test = ".github", "make" })},
		{"anchor and alias", "setup: [&t make test]\ntest: *t\n", with(func(r *RepoSettings) { r.Setup, r.Test = []string{"make test"}, "make test" })},
		{"ci defaults", "test: make\n", with(func(r *RepoSettings) { r.Test = "make"; r.CI = CISettings{Enabled: true, MaxRounds: 2} })},
		{"ci off", "ci: {enabled: false}\n", with(func(r *RepoSettings) { r.CI.Enabled = false })},
		{"ci rerun keeps the other defaults", "ci:\n  rerun_failed: true\n", with(func(r *RepoSettings) { r.CI.RerunFailed = true })},
		{"ci every key", "ci:\n  enabled: true\n  rerun_failed: true\n  max_rounds: 5\n", with(func(r *RepoSettings) { r.CI = CISettings{Enabled: true, RerunFailed: true, MaxRounds: 5} })},
		{"ci empty mapping", "ci: {}\n", def},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRepo([]byte(tt.yaml))
			if err != nil {
				t.Fatalf("ParseRepo(%q) error: %v", tt.yaml, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseRepo(%q) mismatch (-want +got):\n%s", tt.yaml, diff)
			}
		})
	}
}

func TestParseRepoInvalid(t *testing.T) {
	const f = RepoFile
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"unknown key", "test: make\ncolour: blue\n", []string{f + ":2: colour: unknown key; the keys are " + repoKeyNames()}},
		{"unknown key close to a known one", "test: make\ntests: make\n", []string{f + ":2: tests: unknown key; did you mean test?"}},
		{"unknown key with letters swapped", "lables: [bot]\n", []string{f + ":1: lables: unknown key; did you mean labels?"}},
		{"duplicate key", "test: a\ndraft: true\ntest: b\n", []string{f + ":3: test: given twice (first on line 1)"}},
		{"test_policy value", "test_policy:\n  regression: always\n", []string{f + ":2: test_policy: regression: must be required, encouraged or off, got \"always\""}},
		{"test_policy key", "test_policy:\n  regresion: off\n", []string{f + ":2: test_policy: regresion: unknown key; did you mean regression?"}},
		{"test_policy scalar", "test_policy: required\n", []string{f + ":1: test_policy: must be a mapping such as `regression: required`, got the text \"required\""}},
		{"non-string key", "1: x\n", []string{f + ":1: keys must be names, got the number 1"}},
		{"top level list", "- test\n", []string{f + ":1: the file must be a mapping of keys to values, like `test: make test`; got a list"}},
		{"top level string", "make test\n", []string{f + ":1: the file must be a mapping of keys to values, like `test: make test`; got the text \"make test\""}},
		{"two documents", "test: a\n---\ntest: b\n", []string{f + ":2: the file must hold one YAML document, found another (remove the --- line)"}},
		{"syntax error with line", "test: a\n\nsetup:\n  - a: b: c\n", []string{f + ":4: YAML syntax error: mapping values are not allowed in this context (a value holding \": \" must be quoted)"}},
		{"unterminated quote", "test: \"abc\n", []string{f + ":2: YAML syntax error: found unexpected end of stream (a quote that is never closed?)"}},
		{"tab indentation", "\ttest: x\n", []string{f + ":1: YAML syntax error: a tab in the indentation; YAML indents with spaces"}},
		{"tab indentation further down", "setup:\n  - a\n\t- b\n", []string{f + ":3: YAML syntax error: a tab in the indentation; YAML indents with spaces"}},
		{"too large", "instructions: " + strings.Repeat("x", maxRepoFileBytes) + "\n", []string{f + ": the file is 65551 bytes; the most is 65536"}},

		{"setup number", "setup: 5\n", []string{f + ":1: setup: must be a list of commands, got the number 5"}},
		{"setup mapping", "setup:\n  go: build\n", []string{f + ":2: setup: must be a list of commands, got a mapping"}},
		{"setup item not a string", "setup:\n  - make\n  - 42\n", []string{f + ":3: setup: command 2 must be a string, got the number 42 (quote it)"}},
		{"setup item blank", "setup: [make, \" \"]\n", []string{f + ":1: setup: command 2 is empty; give a command or remove the key"}},
		{"setup too many", "setup: [" + strings.Repeat("a, ", maxSetupCommands) + "a]\n", []string{f + ":1: setup: has 21 commands; the most is 20 (join them in a script)"}},
		{"test null", "test:\n", []string{f + ":1: test: has no value; give one or remove the key"}},
		{"test list", "test: [a, b]\n", []string{f + ":1: test: must be a string, got a list"}},
		{"misspelt key", "Max-Steps: 3\n", []string{f + ":1: Max-Steps: unknown key; did you mean max_steps?"}},
		{"test bool", "test: yes please\ndraft: yes\n", []string{f + ":2: draft: must be true or false, got the text \"yes\""}},
		{"test too long", "test: " + strings.Repeat("x", maxCommandLen+1) + "\n", []string{f + ":1: test: is 4001 characters long; the most is 4000"}},
		{"instructions too long", "instructions: " + strings.Repeat("é", maxInstructionsLen+1) + "\n", []string{f + ":1: instructions: is 10001 characters long; the most is 10000"}},
		{"model without provider", "model: gpt-5\n", []string{f + ":1: model: must be provider/model, e.g. openai/gpt-5 or anthropic/claude-sonnet-4-5, got \"gpt-5\""}},
		{"max_steps zero", "max_steps: 0\n", []string{f + ":1: max_steps: must be a positive integer, got the number 0"}},
		{"max_steps float", "max_steps: 2.5\n", []string{f + ":1: max_steps: must be a positive integer, got the number 2.5"}},
		{"max_steps string", "max_steps: \"10\"\n", []string{f + ":1: max_steps: must be a positive integer, got the text \"10\" (remove the quotes)"}},
		{"max_steps string out of range", "max_steps: \"0\"\n", []string{f + ":1: max_steps: must be a positive integer, got the text \"0\""}},
		{"max_cost_usd negative", "max_cost_usd: -1\n", []string{f + ":1: max_cost_usd: must be a positive amount of US dollars, like 1.50, got the number -1"}},
		{"max_cost_usd string", "max_cost_usd: '1.50'\n", []string{f + ":1: max_cost_usd: must be a positive amount of US dollars, like 1.50, got the text \"1.50\" (remove the quotes)"}},
		{"max_cost_usd dollar sign", "max_cost_usd: $2\n", []string{f + ":1: max_cost_usd: must be a positive amount of US dollars, like 1.50, got the text \"$2\""}},
		{"max_cost_usd infinite", "max_cost_usd: .inf\n", []string{f + ":1: max_cost_usd: must be a positive amount of US dollars, like 1.50, got the number .inf"}},
		{"max_duration number", "max_duration: 30\n", []string{f + ":1: max_duration: must be a positive duration such as 30m or 1h30m, got the number 30 (give a unit, like 30m)"}},
		{"max_duration negative", "max_duration: -5m\n", []string{f + ":1: max_duration: must be a positive duration such as 30m or 1h30m, got the text \"-5m\""}},
		{"draft string", "draft: \"true\"\n", []string{f + ":1: draft: must be true or false, got the text \"true\" (remove the quotes)"}},
		{"allowed_users string", "allowed_users: alice\n", []string{f + ":1: allowed_users: must be a list, each entry a GitHub login; got the text \"alice\""}},
		{"allowed_users bad login", "allowed_users:\n  - alice\n  - bob smith\n", []string{f + ":3: allowed_users: \"bob smith\" is not a GitHub login: logins are letters, digits and hyphens, up to 39 characters"}},
		{"allowed_users duplicate", "allowed_users: [alice, \"@Alice\"]\n", []string{f + ":1: allowed_users: \"@Alice\" is listed twice"}},
		{"allowed_users number", "allowed_users: [12]\n", []string{f + ":1: allowed_users: each entry must be a GitHub login: must be a string, got the number 12 (quote it)"}},
		{"allowed_teams without org", "allowed_teams: [maintainers]\n", []string{f + ":1: allowed_teams: \"maintainers\" is not a team as org/team-slug: write the organization and the team's slug, like my-org/maintainers"}},
		{"allow_workflow_changes number", "allow_workflow_changes: 1\n", []string{f + ":1: allow_workflow_changes: must be true or false, got the number 1"}},
		{"branch_prefix empty", "branch_prefix: \"\"\n", []string{f + ":1: branch_prefix: must start a valid git branch name: it is empty, got \"\""}},
		{"branch_prefix refs", "branch_prefix: refs/heads/bot/\n", []string{f + ":1: branch_prefix: must start a valid git branch name: give the prefix without refs/heads/, got \"refs/heads/bot/\""}},
		{"branch_prefix space", "branch_prefix: \"my bot/\"\n", []string{f + `:1: branch_prefix: must start a valid git branch name: it may not contain spaces, control characters or any of ~ ^ : ? * [ \, got "my bot/"`}},
		{"branch_prefix dotdot", "branch_prefix: a..b/\n", []string{f + ":1: branch_prefix: must start a valid git branch name: it may not contain .., @{ or //, got \"a..b/\""}},
		{"branch_prefix double slash", "branch_prefix: a//\n", []string{f + ":1: branch_prefix: must start a valid git branch name: it may not contain .., @{ or //, got \"a//\""}},
		{"branch_prefix leading dash", "branch_prefix: -x/\n", []string{f + ":1: branch_prefix: must start a valid git branch name: it may not start with / or -, got \"-x/\""}},
		{"branch_prefix dot component", "branch_prefix: bot/.hidden/\n", []string{f + ":1: branch_prefix: must start a valid git branch name: no part between slashes may start with . or end with .lock, got \"bot/.hidden/\""}},
		{"branch_prefix lock component", "branch_prefix: bot.lock/\n", []string{f + ":1: branch_prefix: must start a valid git branch name: no part between slashes may start with . or end with .lock, got \"bot.lock/\""}},
		{"branch_prefix too long", "branch_prefix: " + strings.Repeat("a", maxBranchPrefixLen+1) + "\n", []string{f + ":1: branch_prefix: must start a valid git branch name: it is longer than 100 characters, got \"" + strings.Repeat("a", maxBranchPrefixLen+1) + "\""}},
		{"labels too long", "labels: [" + strings.Repeat("l", 51) + "]\n", []string{f + ":1: labels: \"" + strings.Repeat("l", 51) + "\" is not a label name: label names have at most 50 characters"}},
		{"labels padded", "labels: [\" bot\"]\n", []string{f + ":1: labels: \" bot\" is not a label name: it has spaces around it"}},
		{"labels duplicate ignoring case", "labels: [Bot, bot]\n", []string{f + ":1: labels: \"bot\" is listed twice"}},
		{"image not a reference", "image: \"Golang:latest\"\n", []string{f + ":1: image: must be an image reference, e.g. golang:1.26 or ghcr.io/owner/image@sha256:…, got \"Golang:latest\""}},
		{"image number", "image: 5\n", []string{f + ":1: image: must be a string, got the number 5 (quote it)"}},
		{"_extends number", "_extends: 5\n", []string{f + ":1: _extends: must be a string, got the number 5 (quote it)"}},
		{"_extends absolute path", "_extends: acme/base:/etc/passwd.yml\n", []string{f + ":1: _extends: must be repo, owner/repo or owner/repo:path/to/file.yml (the path must be a clean path inside the repository), got \"acme/base:/etc/passwd.yml\""}},
		{"_extends parent path", "_extends: base:../x.yml\n", []string{f + ":1: _extends: must be repo, owner/repo or owner/repo:path/to/file.yml (the path must be a clean path inside the repository), got \"base:../x.yml\""}},
		{"_extends not yaml", "_extends: base:config.json\n", []string{f + ":1: _extends: must be repo, owner/repo or owner/repo:path/to/file.yml (the path must end in .yml or .yaml), got \"base:config.json\""}},
		{"_extends bad owner", "_extends: a_b/base\n", []string{f + ":1: _extends: must be repo, owner/repo or owner/repo:path/to/file.yml (the owner is not a GitHub login), got \"a_b/base\""}},
		{"_extends bad repo", "_extends: acme/a/b\n", []string{f + ":1: _extends: must be repo, owner/repo or owner/repo:path/to/file.yml (the repository name is not valid), got \"acme/a/b\""}},
		{"ci not a mapping", "ci: false\n", []string{f + ":1: ci: must be a mapping of enabled, rerun_failed, max_rounds, like `ci: {enabled: false}`; got the boolean false"}},
		{"ci unknown key close to one", "ci:\n  max_round: 3\n", []string{f + ":2: ci: max_round: unknown key of ci; did you mean max_rounds?"}},
		{"ci unknown key", "ci:\n  colour: blue\n", []string{f + ":2: ci: colour: unknown key of ci; its keys are enabled, rerun_failed, max_rounds"}},
		{"ci max_rounds zero", "ci: {max_rounds: 0}\n", []string{f + ":1: ci: max_rounds: must be a positive integer, got the number 0"}},
		{"ci max_rounds too many", "ci: {max_rounds: 11}\n", []string{f + ":1: ci: max_rounds: is 11; the most is 10"}},
		{"ci enabled quoted", "ci:\n  enabled: \"no\"\n", []string{f + ":2: ci: enabled: must be true or false, got the text \"no\""}},
		{"ci key twice", "ci:\n  enabled: true\n  enabled: false\n", []string{f + ":3: ci: enabled: given twice (first on line 2)"}},
		{
			"ci every problem at once",
			"ci:\n  enabled: maybe\n  rerun_failed: 1\n  max_rounds: many\n",
			[]string{
				f + ":2: ci: enabled: must be true or false, got the text \"maybe\"",
				f + ":3: ci: rerun_failed: must be true or false, got the number 1",
				f + ":4: ci: max_rounds: must be a positive integer, got the text \"many\"",
			},
		},
		{
			"every problem at once",
			"max_steps: many\ndraft: maybe\nfoo: 1\n",
			[]string{
				f + ":1: max_steps: must be a positive integer, got the text \"many\"",
				f + ":2: draft: must be true or false, got the text \"maybe\"",
				f + ":3: foo: unknown key; the keys are " + repoKeyNames(),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRepo([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("ParseRepo(%q) = %+v, want an error", tt.yaml, got)
			}
			if diff := cmp.Diff(tt.want, problemLines(t, err)); diff != "" {
				t.Errorf("ParseRepo(%q) problems mismatch (-want +got):\n%s", tt.yaml, diff)
			}
		})
	}
}

// TestRepoErrorGolden fixes the text a requester gets for an invalid file.
func TestRepoErrorGolden(t *testing.T) {
	file := `# agent-fix configuration
setup:
  - npm ci
  - 42
test: npm test
max_steps: -1
max_cost_usd: "lots"
max_duration: 2 hours
draft: maybe
allowed_users: [alice, "bob smith"]
allowed_teams: [maintainers]
branch_prefix: "my bot/"
labels: bot
model: gpt-5
instructions: [be careful]
ci:
  enabled: "off"
  rerun: true
  max_rounds: 20
extends: .github
tset: npm run check
`
	_, err := ParseRepo([]byte(file))
	if err == nil {
		t.Fatal("ParseRepo of the invalid file: no error")
	}
	golden(t, "repo_errors.golden", err.Error()+"\n")
}
