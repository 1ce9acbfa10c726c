package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"go.yaml.in/yaml/v3"
)

// repoKey is one key of RepoFile: set validates the value node and stores
// it in the Repo, or returns a *nodeError saying what is wrong.
type repoKey struct {
	name string
	set  func(r *RepoSettings, n *yaml.Node) error
}

// IsImageReference reports whether s names a container image (a tag or a
// digest, as go-containerregistry parses it): image: here,
// AGENTFIX_SANDBOX_IMAGE and bot fix --image.
func IsImageReference(s string) bool {
	_, err := name.ParseReference(s)
	return err == nil
}

// extendsKey is the key naming the file a configuration builds on.
const extendsKey = "_extends"

// repoKeys lists the keys of RepoFile in the order the documentation gives
// them. _extends is handled by the resolver, not here.
var repoKeys = []repoKey{
	{"image", func(r *RepoSettings, n *yaml.Node) error {
		s, err := str(n)
		if err == nil {
			if !IsImageReference(s) {
				err = nodeErrorf(n, "must be an image reference, e.g. golang:1.26 or ghcr.io/owner/image@sha256:…, got %q", s)
			}
		}
		r.Image = s
		return err
	}},
	{"setup", func(r *RepoSettings, n *yaml.Node) (err error) {
		r.Setup, err = commandList(n)
		return err
	}},
	{"test", func(r *RepoSettings, n *yaml.Node) (err error) {
		r.Test, err = command(n)
		return err
	}},
	{"instructions", func(r *RepoSettings, n *yaml.Node) (err error) {
		r.Instructions, err = text(n, maxInstructionsLen)
		return err
	}},
	{"model", func(r *RepoSettings, n *yaml.Node) error {
		s, err := str(n)
		if err == nil && !modelName.MatchString(s) {
			err = nodeErrorf(n, "must be provider/model, e.g. openai/gpt-5 or anthropic/claude-sonnet-4-5, got %q", s)
		}
		r.Model = s
		return err
	}},
	{"max_steps", func(r *RepoSettings, n *yaml.Node) (err error) {
		r.MaxSteps, err = positiveInt(n)
		return err
	}},
	{"max_cost_usd", func(r *RepoSettings, n *yaml.Node) (err error) {
		r.MaxCostUSD, err = positiveUSD(n)
		return err
	}},
	{"max_duration", func(r *RepoSettings, n *yaml.Node) (err error) {
		r.MaxDuration, err = positiveDuration(n)
		return err
	}},
	{"draft", func(r *RepoSettings, n *yaml.Node) (err error) {
		r.Draft, err = boolean(n)
		return err
	}},
	{"allowed_users", func(r *RepoSettings, n *yaml.Node) (err error) {
		r.AllowedUsers, err = nameList(n, "a GitHub login", normalizeLogin)
		return err
	}},
	{"allowed_teams", func(r *RepoSettings, n *yaml.Node) (err error) {
		r.AllowedTeams, err = nameList(n, "a team as org/team-slug", normalizeTeam)
		return err
	}},
	{"allow_workflow_changes", func(r *RepoSettings, n *yaml.Node) (err error) {
		r.AllowWorkflowChanges, err = boolean(n)
		return err
	}},
	{"branch_prefix", func(r *RepoSettings, n *yaml.Node) error {
		s, err := str(n)
		if err == nil {
			if why := badBranchPrefix(s); why != "" {
				err = nodeErrorf(n, "must start a valid git branch name: %s, got %q", why, s)
			}
		}
		r.BranchPrefix = s
		return err
	}},
	{"labels", func(r *RepoSettings, n *yaml.Node) (err error) {
		r.Labels, err = nameList(n, "a label name", normalizeLabel)
		return err
	}},
	{"test_policy", func(r *RepoSettings, n *yaml.Node) error {
		return testPolicy(&r.TestPolicy, n)
	}},
	{"ci", func(r *RepoSettings, n *yaml.Node) error { return r.CI.set(n) }},
}

// testPolicy reads test_policy: a mapping whose one key, regression, is
// required, encouraged or off.
func testPolicy(p *TestPolicy, n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return nodeErrorf(n, "must be a mapping such as `regression: required`, got %s", describe(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		if k.Value != "regression" {
			msg := "unknown key; the keys are regression"
			if s := suggest(k.Value, []string{"regression"}); s != "" {
				msg = "unknown key; did you mean " + s + "?"
			}
			return nodeErrorf(k, "%s: %s", k.Value, msg)
		}
		s, err := str(v)
		if err != nil {
			return err
		}
		switch s {
		case "required", "encouraged", "off":
			p.Regression = s
		default:
			return nodeErrorf(v, "regression: must be required, encouraged or off, got %q", s)
		}
	}
	return nil
}

// keyNames lists the keys of repoKeys.
func keyNames() []string {
	names := make([]string, len(repoKeys))
	for i, k := range repoKeys {
		names[i] = k.name
	}
	return names
}

// repoKeyNames lists every key of RepoFile, for the unknown-key message.
func repoKeyNames() string {
	return strings.Join(append([]string{extendsKey}, keyNames()...), ", ")
}

// unknownKey says that key is not a key of RepoFile, suggesting the one it
// looks like (see suggest) or listing them all.
func unknownKey(key string) string {
	if k := suggest(key, append([]string{extendsKey}, keyNames()...)); k != "" {
		return fmt.Sprintf("unknown key; did you mean %s?", k)
	}
	return "unknown key; the keys are " + repoKeyNames()
}

// repoFileDoc is one parsed and validated configuration file.
type repoFileDoc struct {
	name        string // as shown in problems
	extends     string // raw _extends value, if any
	extendsLine int
	entries     []repoEntry
}

// repoEntry is one valid key of a file and its value.
type repoEntry struct {
	key  *repoKey
	node *yaml.Node
}

// apply sets the file's keys on r, overriding what r had for those keys.
func (f *repoFileDoc) apply(r *RepoSettings) {
	for _, e := range f.entries {
		_ = e.key.set(r, e.node) // validated by parseRepoFile
	}
}

// parseRepoFile parses and validates data, a configuration file shown as
// name in problems. When owner is set, teams must belong to it.
func parseRepoFile(name, owner string, data []byte) (*repoFileDoc, []RepoProblem) {
	f := &repoFileDoc{name: name}
	problem := func(line int, key, format string, args ...any) []RepoProblem {
		return []RepoProblem{{File: name, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}}
	}
	if len(data) > maxRepoFileBytes {
		return nil, problem(0, "", "the file is %d bytes; the most is %d", len(data), maxRepoFileBytes)
	}
	root, dp := parseDocument(data)
	switch {
	case dp != nil:
		return nil, problem(dp.line, "", "%s", dp.msg)
	case root == nil:
		return f, nil // empty, or only comments
	case root.Kind != yaml.MappingNode:
		return nil, problem(root.Line, "", "the file must be a mapping of keys to values, like `test: make test`; got %s", describe(root))
	}
	return f, f.parseKeys(root, owner)
}

// parseKeys validates the keys of the file's top-level mapping and keeps
// the valid ones.
func (f *repoFileDoc) parseKeys(root *yaml.Node, owner string) []RepoProblem {
	var problems []RepoProblem
	add := func(line int, key, msg string) {
		problems = append(problems, RepoProblem{File: f.name, Line: line, Key: key, Msg: msg})
	}
	byName := map[string]*repoKey{}
	for i := range repoKeys {
		byName[repoKeys[i].name] = &repoKeys[i]
	}
	seen := map[string]int{}
	var scratch RepoSettings
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], deref(root.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			add(k.Line, "", fmt.Sprintf("keys must be names, got %s", describe(k)))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			add(k.Line, k.Value, fmt.Sprintf("given twice (first on line %d)", first))
			continue
		}
		seen[k.Value] = k.Line
		if k.Value == extendsKey {
			s, err := str(v)
			if err == nil {
				_, err = parseExtends(v, s, "")
			}
			if err != nil {
				add(lineOf(err, v), k.Value, err.Error())
				continue
			}
			f.extends, f.extendsLine = s, k.Line
			continue
		}
		key, ok := byName[k.Value]
		if !ok {
			add(k.Line, k.Value, unknownKey(k.Value))
			continue
		}
		if err := key.set(&scratch, v); err != nil {
			var several subKeyProblems
			if errors.As(err, &several) {
				for _, p := range several {
					add(lineOf(p, v), k.Value, p.Error())
				}
				continue
			}
			add(lineOf(err, v), k.Value, err.Error())
			continue
		}
		if key.name == "allowed_teams" && owner != "" {
			if msg := foreignTeams(scratch.AllowedTeams, owner); msg != "" {
				add(v.Line, k.Value, msg)
				continue
			}
		}
		f.entries = append(f.entries, repoEntry{key: key, node: v})
	}
	return problems
}

// foreignTeams names the teams not of the repository's owner: the bot can
// only check membership of the owner's teams.
func foreignTeams(teams []string, owner string) string {
	var bad []string
	for _, t := range teams {
		org, _, _ := strings.Cut(t, "/")
		if !strings.EqualFold(org, owner) {
			bad = append(bad, t)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return fmt.Sprintf("%s not of the organization %s; only its own teams can be checked", strings.Join(bad, ", "), owner)
}
