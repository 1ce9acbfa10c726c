package docs

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentfix/agentfix/config"
)

// configDoc is the page that lists every setting and key.
const configDoc = "docs/configuration.md"

// pending are settings and keys configuration.md describes ahead of the
// code that is being written for them (none at the moment). Once the code
// has one, this test fails until it is taken off this list, so the list
// cannot outlive its reason.
var pending = map[string]string{}

// yamlKey returns the YAML key of a struct field, "" for none.
func yamlKey(f reflect.StructField) string {
	k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if k == "-" {
		return ""
	}
	return k
}

// keysOf lists the YAML keys of the struct type t, and, for each field
// that is a struct or a map of structs, its keys as key.sub.
func keysOf(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		k := yamlKey(f)
		if k == "" || !f.IsExported() {
			continue
		}
		out = append(out, prefix+k)
		ft := f.Type
		if ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[struct{}]() {
			out = append(out, keysOf(ft, prefix+k+".")...)
		}
	}
	return out
}

// operatorSettings lists what the operator sets: the environment variable
// of every setting of config.App that has one (AGENTFIX_<KEY> unless an
// env tag names it), and the keys of the YAML-only mappings (prices) with
// their sub-keys.
func operatorSettings() (env, yamlOnly []string) {
	t := reflect.TypeFor[config.App]()
	for i := range t.NumField() {
		f := t.Field(i)
		k := yamlKey(f)
		if k == "" || !f.IsExported() {
			continue
		}
		if f.Type.Kind() == reflect.Map {
			yamlOnly = append(yamlOnly, keysOf(reflect.StructOf([]reflect.StructField{f}), "")...)
			continue
		}
		name := f.Tag.Get("env")
		if name == "" {
			name = config.EnvPrefix + strings.ToUpper(k)
		}
		env = append(env, name)
	}
	return env, yamlOnly
}

// checkDocumented reports every name of code missing from documented,
// every documented name that is neither in code, nor in extra, nor
// pending, and every pending name that code has now.
func checkDocumented(t *testing.T, what string, code, documented, extra []string) {
	t.Helper()
	for _, n := range code {
		if _, ok := pending[n]; ok {
			t.Errorf("%s %s is in the code now: remove it from pending in docs/config_test.go", what, n)
			continue
		}
		if !slices.Contains(documented, n) {
			t.Errorf("%s %s exists in the code but has no row in %s", what, n, configDoc)
		}
	}
	for _, n := range documented {
		if _, ok := pending[n]; ok || slices.Contains(code, n) || slices.Contains(extra, n) {
			continue
		}
		t.Errorf("%s documents %s %s, which the code does not have", configDoc, what, n)
	}
}

func TestEveryOperatorSettingIsDocumented(t *testing.T) {
	t.Parallel()
	md := readDoc(t, configDoc)
	env, yamlOnly := operatorSettings()
	if len(env) < 30 || !slices.Contains(env, "OPENAI_API_KEY") || !slices.Contains(env, "AGENTFIX_MAX_STEPS") {
		t.Fatalf("operatorSettings found %d variables %v; the reflection over config.App is broken", len(env), env)
	}
	checkDocumented(t, "the setting", env, rowNames(section(t, configDoc, md, "Operator settings")), []string{config.ConfigVar})

	var subKeys []string
	for _, k := range yamlOnly {
		if !strings.Contains(k, ".") {
			if !strings.Contains(md, "`"+k+"`") {
				t.Errorf("the YAML-only setting %s is not named in %s", k, configDoc)
			}
			continue
		}
		subKeys = append(subKeys, k)
	}
	if !slices.Contains(subKeys, "prices.cache_read") {
		t.Fatalf("operatorSettings found the YAML-only keys %v; want prices and its sub-keys", yamlOnly)
	}
	checkDocumented(t, "the key", subKeys, rowNames(section(t, configDoc, md, "Prices")), nil)
}

func TestEveryRepositoryKeyIsDocumented(t *testing.T) {
	t.Parallel()
	md := readDoc(t, configDoc)
	keys := keysOf(reflect.TypeFor[config.RepoSettings](), "")
	if !slices.Contains(keys, "_extends") || !slices.Contains(keys, "test_policy.regression") {
		t.Fatalf("keysOf(RepoSettings) = %v; want _extends and test_policy.regression among them", keys)
	}
	checkDocumented(t, "the key", keys, rowNames(section(t, configDoc, md, "Repository settings")), nil)
}

// TestKeysOf checks the reflection the two tests above rely on, so that
// a broken walk cannot make them pass on nothing.
func TestKeysOf(t *testing.T) {
	t.Parallel()
	type inner struct {
		A string `yaml:"a"`
		B int    `yaml:"b,omitempty"`
	}
	type outer struct {
		X      string `yaml:"x"`
		Skip   string `yaml:"-"`
		NoTag  string
		In     inner            `yaml:"in"`
		ByName map[string]inner `yaml:"by_name"`
		List   []string         `yaml:"list"`
	}
	got := keysOf(reflect.TypeFor[outer](), "")
	want := []string{"x", "in", "in.a", "in.b", "by_name", "by_name.a", "by_name.b", "list"}
	if !slices.Equal(got, want) {
		t.Errorf("keysOf = %v, want %v", got, want)
	}
}
