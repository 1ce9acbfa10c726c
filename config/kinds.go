package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// valueKind is how the settings of one Go type are written: what a value
// looks like in words, for messages, and how it is read from YAML and from
// an environment variable. A setting of a type missing from valueKinds
// fails TestEveryFieldHasAKind.
type valueKind struct {
	// words completes "must be …": "a whole number".
	words string
	// tags are the YAML tags a value may have; none means any scalar.
	tags []string
	// parse reads a value from an environment variable; nil for settings
	// that are YAML only (mappings).
	parse func(s string) (any, error)
}

// valueKinds lists the kinds of App's settings by Go type. A new type of
// setting is one entry here.
var valueKinds = map[reflect.Type]valueKind{
	reflect.TypeFor[string](): {
		words: "a string",
		parse: func(s string) (any, error) { return s, nil },
	},
	reflect.TypeFor[bool](): {
		words: "true or false",
		tags:  []string{"!!bool"},
		parse: func(s string) (any, error) { return strconv.ParseBool(s) },
	},
	reflect.TypeFor[int](): {
		words: "a whole number",
		tags:  []string{"!!int"},
		parse: func(s string) (any, error) { return strconv.ParseInt(s, 10, strconv.IntSize) },
	},
	reflect.TypeFor[int64](): {
		words: "a whole number",
		tags:  []string{"!!int"},
		parse: func(s string) (any, error) { return strconv.ParseInt(s, 10, 64) },
	},
	reflect.TypeFor[float64](): {
		words: "a number such as 2.5",
		tags:  []string{"!!int", "!!float"},
		parse: func(s string) (any, error) { return strconv.ParseFloat(s, 64) },
	},
	reflect.TypeFor[time.Duration](): {
		words: "a duration such as 45m or 1h30m",
		tags:  []string{"!!str"},
		parse: func(s string) (any, error) { return time.ParseDuration(s) },
	},
	reflect.TypeFor[map[string]Price](): {
		words: "a mapping of models to their prices, such as `openai/gpt-5: {input: 1.25, output: 10}`",
	},
}

// setFromEnv parses s, the value of an environment variable, into v.
func setFromEnv(v reflect.Value, s string) error {
	k := valueKinds[v.Type()]
	x, err := k.parse(s)
	if err != nil {
		return fmt.Errorf("must be %s, got %q%s", k.words, s, unitHint(v.Type(), s))
	}
	v.Set(reflect.ValueOf(x).Convert(v.Type()))
	return nil
}

// setFromYAML decodes the scalar node n into v.
func setFromYAML(v reflect.Value, n *yaml.Node) error {
	n = deref(n)
	k := valueKinds[v.Type()]
	if isNull(n) {
		return nodeErrorf(n, "has no value; give one or remove the key")
	}
	ok := n.Kind == yaml.ScalarNode && (len(k.tags) == 0 || slices.Contains(k.tags, n.ShortTag()))
	x := reflect.New(v.Type())
	if !ok || n.Decode(x.Interface()) != nil {
		valid := func(p *yaml.Node) bool { return setFromYAML(reflect.New(v.Type()).Elem(), p) == nil }
		return nodeErrorf(n, "must be %s, got %s%s%s", k.words, describe(n), unitHint(v.Type(), n.Value), quotesHint(n, valid))
	}
	v.Set(x.Elem())
	return nil
}

// unitHint says, when s is a bare number refused as a duration (t), to
// give it a unit.
func unitHint(t reflect.Type, s string) string {
	if t != reflect.TypeFor[time.Duration]() {
		return ""
	}
	if _, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
		return ""
	}
	return fmt.Sprintf(" (give a unit, like %sm)", strings.TrimSpace(s))
}

// quotesHint says, when n is a quoted scalar whose text valid takes
// unquoted ("10" for a number), to remove the quotes.
func quotesHint(n *yaml.Node, valid func(*yaml.Node) bool) string {
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) == 0 {
		return ""
	}
	var doc yaml.Node
	if yaml.Unmarshal([]byte(n.Value), &doc) != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.ScalarNode {
		return ""
	}
	if !valid(doc.Content[0]) {
		return ""
	}
	return " (remove the quotes)"
}
