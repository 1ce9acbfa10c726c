package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// nodeError is a problem with a value, at the line of the node it is about
// (an item of a list may be on another line than its key).
type nodeError struct {
	line int
	msg  string
}

func (e *nodeError) Error() string { return e.msg }

func nodeErrorf(n *yaml.Node, format string, args ...any) error {
	return &nodeError{line: n.Line, msg: fmt.Sprintf(format, args...)}
}

// lineOf returns the line an error from a setter is about, n's by default.
func lineOf(err error, n *yaml.Node) int {
	var ne *nodeError
	if errors.As(err, &ne) && ne.line > 0 {
		return ne.line
	}
	return n.Line
}

// deref follows a YAML alias (*name) to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe says what a node is, for messages: "a list", "the number 5".
func describe(n *yaml.Node) string {
	n = deref(n)
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	switch n.ShortTag() {
	case "!!null":
		return "no value"
	case "!!int", "!!float":
		return "the number " + n.Value
	case "!!bool":
		return "the boolean " + n.Value
	case "!!str":
		return fmt.Sprintf("the text %q", n.Value)
	}
	return fmt.Sprintf("%q", n.Value)
}

// str returns a string value; other scalars (numbers, booleans), lists,
// mappings and no value at all are errors.
func str(n *yaml.Node) (string, error) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		if isNull(n) {
			return "", nodeErrorf(n, "has no value; give one or remove the key")
		}
		if n.Kind == yaml.ScalarNode {
			return "", nodeErrorf(n, "must be a string, got %s (quote it)", describe(n))
		}
		return "", nodeErrorf(n, "must be a string, got %s", describe(n))
	}
	return n.Value, nil
}

// text returns a string of at most maxRunes characters.
func text(n *yaml.Node, maxRunes int) (string, error) {
	s, err := str(n)
	if err != nil {
		return "", err
	}
	if c := utf8.RuneCountInString(s); c > maxRunes {
		return "", nodeErrorf(n, "is %d characters long; the most is %d", c, maxRunes)
	}
	return s, nil
}

// command returns a shell command: non-blank and of bounded length.
func command(n *yaml.Node) (string, error) {
	s, err := text(n, maxCommandLen)
	if err == nil && strings.TrimSpace(s) == "" {
		err = nodeErrorf(n, "is empty; give a command or remove the key")
	}
	return s, err
}

// commandList returns a list of commands; a single string is a list of one.
func commandList(n *yaml.Node) ([]string, error) {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		s, err := command(n)
		if err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, nodeErrorf(n, "must be a list of commands, got %s", describe(n))
	}
	if len(n.Content) > maxSetupCommands {
		return nil, nodeErrorf(n, "has %d commands; the most is %d (join them in a script)", len(n.Content), maxSetupCommands)
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		s, err := command(item)
		if err != nil {
			return nil, &nodeError{line: lineOf(err, item), msg: fmt.Sprintf("command %d %s", i+1, err)}
		}
		out = append(out, s)
	}
	return out, nil
}

// nameList returns a list of names (logins, teams, labels), each checked
// and normalized by norm, which says what is wrong or returns the name.
// Duplicates are errors.
func nameList(n *yaml.Node, what string, norm func(string) (string, string)) ([]string, error) {
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		return nil, nodeErrorf(n, "must be a list, each entry %s; got %s", what, describe(n))
	}
	if len(n.Content) > maxListEntries {
		return nil, nodeErrorf(n, "has %d entries; the most is %d", len(n.Content), maxListEntries)
	}
	out := make([]string, 0, len(n.Content))
	seen := map[string]bool{}
	for _, item := range n.Content {
		s, err := str(item)
		if err != nil {
			return nil, &nodeError{line: lineOf(err, item), msg: fmt.Sprintf("each entry must be %s: %s", what, err)}
		}
		name, why := norm(s)
		if why != "" {
			return nil, nodeErrorf(item, "%q is not %s: %s", s, what, why)
		}
		if seen[strings.ToLower(name)] {
			return nil, nodeErrorf(item, "%q is listed twice", s)
		}
		seen[strings.ToLower(name)] = true
		out = append(out, name)
	}
	return out, nil
}

var (
	loginName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,38}$`)
	teamSlug  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)
)

// normalizeLogin accepts a GitHub login, with or without a leading @.
func normalizeLogin(s string) (string, string) {
	s = strings.TrimPrefix(s, "@")
	if !loginName.MatchString(s) {
		return "", "logins are letters, digits and hyphens, up to 39 characters"
	}
	return s, ""
}

// normalizeTeam accepts "org/team-slug", with or without a leading @, and
// returns it in lower case as GitHub's slugs are.
func normalizeTeam(s string) (string, string) {
	org, slug, ok := strings.Cut(strings.TrimPrefix(s, "@"), "/")
	if !ok || !loginName.MatchString(org) || !teamSlug.MatchString(slug) {
		return "", "write the organization and the team's slug, like my-org/maintainers"
	}
	return strings.ToLower(org + "/" + slug), ""
}

// normalizeLabel accepts a GitHub label name.
func normalizeLabel(s string) (string, string) {
	switch {
	case strings.TrimSpace(s) == "":
		return "", "it is empty"
	case strings.TrimSpace(s) != s:
		return "", "it has spaces around it"
	case utf8.RuneCountInString(s) > maxGitHubLabelRunes:
		return "", fmt.Sprintf("label names have at most %d characters", maxGitHubLabelRunes)
	}
	return s, ""
}

func boolean(n *yaml.Node) (bool, error) {
	n = deref(n)
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		return false, nodeErrorf(n, "must be true or false, got %s%s", describe(n), quotesHint(n, validates(boolean)))
	}
	return b, nil
}

func positiveInt(n *yaml.Node) (int, error) {
	n = deref(n)
	var i int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil || i < 1 {
		return 0, nodeErrorf(n, "must be a positive integer, got %s%s", describe(n), quotesHint(n, validates(positiveInt)))
	}
	return i, nil
}

func positiveUSD(n *yaml.Node) (float64, error) {
	n = deref(n)
	var f float64
	tag := n.ShortTag()
	if n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") || n.Decode(&f) != nil ||
		math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		return 0, nodeErrorf(n, "must be a positive amount of US dollars, like 1.50, got %s%s", describe(n), quotesHint(n, validates(positiveUSD)))
	}
	return f, nil
}

func positiveDuration(n *yaml.Node) (time.Duration, error) {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		if d, err := time.ParseDuration(n.Value); err == nil && d > 0 {
			return d, nil
		}
	}
	return 0, nodeErrorf(n, "must be a positive duration such as 30m or 1h30m, got %s%s", describe(n), unitHint(reflect.TypeFor[time.Duration](), n.Value))
}

// validates turns a reader of values into the test quotesHint takes.
func validates[T any](read func(*yaml.Node) (T, error)) func(*yaml.Node) bool {
	return func(n *yaml.Node) bool {
		_, err := read(n)
		return err == nil
	}
}

// badBranchPrefix says why p cannot start a branch name (the rules of
// git check-ref-format for the name p+"issue-1"), or returns "".
func badBranchPrefix(p string) string {
	name := p + "issue-1"
	switch {
	case p == "":
		return "it is empty"
	case len(p) > maxBranchPrefixLen:
		return fmt.Sprintf("it is longer than %d characters", maxBranchPrefixLen)
	case strings.HasPrefix(p, "refs/"):
		return "give the prefix without refs/heads/"
	case strings.HasPrefix(p, "/"), strings.HasPrefix(p, "-"):
		return "it may not start with / or -"
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) }):
		return `it may not contain spaces, control characters or any of ~ ^ : ? * [ \`
	case strings.Contains(p, ".."), strings.Contains(p, "@{"), strings.Contains(p, "//"):
		return "it may not contain .., @{ or //"
	}
	for _, c := range strings.Split(name, "/") {
		if strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") {
			return "no part between slashes may start with . or end with .lock"
		}
	}
	return ""
}
