package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Defaults and bounds of the ci key.
const (
	// DefaultCIMaxRounds is how many automatic rounds one pull request
	// gets when ci.max_rounds is not set.
	DefaultCIMaxRounds = 2
	// maxCIRounds bounds ci.max_rounds.
	maxCIRounds = 10
)

// CISettings is the ci key of RepoFile: whether and how far the bot keeps
// its own pull requests green on its own, without being asked. An
// automatic round is a round on one of the bot's pull requests that the bot
// starts itself: a ci round when checks failed on its head, a conflict
// round when the base branch moved and the pull request no longer merges.
type CISettings struct {
	// Enabled lets the bot start automatic rounds (default true); false
	// turns them off. Rounds people ask for are not affected.
	Enabled bool `yaml:"enabled"`
	// RerunFailed has the bot re-run the failed GitHub Actions jobs once
	// before it starts a ci round (it needs the App's actions: write
	// permission); a check that passes on the re-run is reported as flaky
	// and not worked on.
	RerunFailed bool `yaml:"rerun_failed"`
	// MaxRounds bounds the automatic rounds on one pull request
	// (DefaultCIMaxRounds), ci and conflict rounds together.
	MaxRounds int `yaml:"max_rounds"`
}

// DefaultCI returns the ci settings of a repository that sets none.
func DefaultCI() CISettings {
	return CISettings{Enabled: true, MaxRounds: DefaultCIMaxRounds}
}

// ciKey is one key of the ci mapping.
type ciKey struct {
	name string
	set  func(c *CISettings, n *yaml.Node) error
}

// ciKeys lists the keys of the ci mapping in the order the documentation
// gives them.
var ciKeys = []ciKey{
	{"enabled", func(c *CISettings, n *yaml.Node) (err error) {
		c.Enabled, err = boolean(n)
		return err
	}},
	{"rerun_failed", func(c *CISettings, n *yaml.Node) (err error) {
		c.RerunFailed, err = boolean(n)
		return err
	}},
	{"max_rounds", func(c *CISettings, n *yaml.Node) error {
		v, err := positiveInt(n)
		if err == nil && v > maxCIRounds {
			err = nodeErrorf(n, "is %d; the most is %d", v, maxCIRounds)
		}
		c.MaxRounds = v
		return err
	}},
}

// subKeyProblems are the problems of a mapping key's own keys, each a
// *nodeError whose message starts with the key it is about; parseKeys
// reports each as a problem of its own.
type subKeyProblems []error

func (p subKeyProblems) Error() string {
	msgs := make([]string, len(p))
	for i, e := range p {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// set applies the keys of a ci mapping to c, leaving the keys it does not
// give as they were: a file that extends another changes only the ci keys
// it names. Every problem of the mapping is returned, as subKeyProblems.
func (c *CISettings) set(n *yaml.Node) error {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		return nodeErrorf(n, "must be a mapping of %s, like `ci: {enabled: false}`; got %s", ciKeyNames(), describe(n))
	}
	var problems subKeyProblems
	add := func(at *yaml.Node, key string, err error) {
		problems = append(problems, &nodeError{line: lineOf(err, at), msg: key + ": " + err.Error()})
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			problems = append(problems, nodeErrorf(k, "keys must be names, got %s", describe(k)))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			add(k, k.Value, fmt.Errorf("given twice (first on line %d)", first))
			continue
		}
		seen[k.Value] = k.Line
		key := findCIKey(k.Value)
		if key == nil {
			add(k, k.Value, fmt.Errorf("%s", unknownCIKey(k.Value)))
			continue
		}
		if err := key.set(c, v); err != nil {
			add(deref(v), k.Value, err)
		}
	}
	if len(problems) > 0 {
		return problems
	}
	return nil
}

func findCIKey(name string) *ciKey {
	for i := range ciKeys {
		if ciKeys[i].name == name {
			return &ciKeys[i]
		}
	}
	return nil
}

// ciKeyNames lists the keys of the ci mapping, for messages.
func ciKeyNames() string {
	names := make([]string, len(ciKeys))
	for i, k := range ciKeys {
		names[i] = k.name
	}
	return strings.Join(names, ", ")
}

// unknownCIKey says that key is not a key of the ci mapping.
func unknownCIKey(key string) string {
	names := strings.Split(ciKeyNames(), ", ")
	if k := suggest(key, names); k != "" {
		return fmt.Sprintf("unknown key of ci; did you mean %s?", k)
	}
	return "unknown key of ci; its keys are " + ciKeyNames()
}
