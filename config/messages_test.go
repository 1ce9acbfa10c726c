package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// configCase is an operator's configuration: files in the working
// directory, the YAML file passed to Load, and the process environment.
type configCase struct {
	name    string
	files   map[string]string // by name in the working directory, written mode 0600
	config  string            // the YAML path given to Load; none when empty
	environ []string
	chmod   map[string]os.FileMode // modes to set after writing
}

// messages loads c in a fresh working directory, validates the result when
// it loads, and returns what the operator reads: the error's lines, then the
// warnings, with the directory written as $WORKDIR.
func (c configCase) messages(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range c.files {
		writeFile(t, dir, name, content, 0o600)
	}
	for name, mode := range c.chmod {
		if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	a, err := Load(c.config, c.environ, dir)
	var warnings []string
	if err == nil {
		if err = a.Validate(); err == nil {
			warnings = a.Warnings() // else in the error
		}
	}
	var lines []string
	if err != nil {
		lines = strings.Split(err.Error(), "\n")
	}
	for _, w := range warnings {
		lines = append(lines, "warning: "+w)
	}
	for i := range lines {
		lines[i] = strings.ReplaceAll(lines[i], dir, "$WORKDIR")
	}
	return lines
}

// render writes the case for a golden file: its name, its input, and its
// messages.
func (c configCase) render(lines []string) string {
	var b strings.Builder
	b.WriteString("=== " + c.name + "\n")
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for name := range c.files {
			if !yield(name) {
				return
			}
		}
	}) {
		b.WriteString("--- " + name + "\n" + c.files[name])
		if !strings.HasSuffix(c.files[name], "\n") {
			b.WriteString("\n")
		}
	}
	if c.config != "" {
		b.WriteString("--- --config " + c.config + "\n")
	}
	for _, kv := range c.environ {
		b.WriteString("--- environment " + kv + "\n")
	}
	b.WriteString("--- messages\n")
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return b.String() + "\n"
}

// goldenCases renders every case into the golden file name. Each case must
// get a message: a case that loads cleanly fails the test.
func goldenCases(t *testing.T, name string, cases []configCase) {
	t.Helper()
	var out strings.Builder
	for _, c := range cases {
		lines := c.messages(t)
		if len(lines) == 0 {
			t.Errorf("%s: no message, want at least one", c.name)
		}
		out.WriteString(c.render(lines))
	}
	golden(t, name, out.String())
}

// yamlCase is a case with only the operator's YAML file.
func yamlCase(name, content string) configCase {
	return configCase{name: name, files: map[string]string{"agentfix.yml": content}, config: "agentfix.yml"}
}

// TestConfigFileMessages fixes the text of every problem of the operator's
// YAML file.
func TestConfigFileMessages(t *testing.T) {
	goldenCases(t, "config_file_errors.golden", []configCase{
		yamlCase("unknown key close to a known one", "max_step: 10\n"),
		yamlCase("unknown key in another case and with hyphens", "Max-Steps: 10\n"),
		yamlCase("unknown key with letters swapped", "modle: openai/gpt-5\n"),
		yamlCase("unknown key that starts a known one", "redis: redis://localhost:6379/0\n"),
		yamlCase("unknown key close to nothing", "frobnicate: 1\n"),
		yamlCase("unknown key close to a secret", "webhook_secrt: s3cret\n"),
		yamlCase("a whole number", "max_steps: many\n"),
		yamlCase("a whole number in quotes", "app_id: \"12345\"\n"),
		yamlCase("a whole number, not a fraction", "agent_concurrency: 1.5\n"),
		yamlCase("a number", "max_cost_usd: cheap\n"),
		yamlCase("a duration without a unit", "max_duration: 45\n"),
		yamlCase("a duration in words", "run_retention: two weeks\n"),
		yamlCase("true or false", "allow_unsandboxed: yes please\n"),
		yamlCase("true or false in quotes", "allow_unpriced_model: 'true'\n"),
		yamlCase("a string, not a list", "model: [openai/gpt-5]\n"),
		yamlCase("no value", "listen_addr:\n"),
		yamlCase("a secret", "listen_addr: :8080\nwebhook_secret: s3cret\n"),
		yamlCase("an empty secret", "openai_api_key: \"\"\n"),
		yamlCase("a Redis URL with a password", "redis_url: redis://:hunter2@localhost:6379/0\n"),
		yamlCase("a key given twice", "model: openai/gpt-5\nmax_steps: 10\nmodel: anthropic/claude-sonnet-4-5\n"),
		yamlCase("a key that is not a name", "1: x\n"),
		yamlCase("not a mapping", "- model: openai/gpt-5\n"),
		yamlCase("a YAML syntax error", "model: openai/gpt-5\nsandbox: bwrap: docker\n"),
		yamlCase("a tab in the indentation", "prices:\n\topenai/gpt-5:\n    input: 1\n"),
		yamlCase("two documents", "model: openai/gpt-5\n---\nmodel: openai/gpt-5-mini\n"),
		yamlCase("prices not a mapping", "prices: [openai/gpt-5]\n"),
		yamlCase("a price not a mapping", "prices:\n  openai/gpt-5: 1.25\n"),
		yamlCase("an unknown key of a price", "prices:\n  openai/gpt-5:\n    inptu: 1.25\n    output: 10\n"),
		yamlCase("a price of the wrong type", "prices:\n  openai/gpt-5:\n    input: cheap\n"),
		yamlCase("a model priced twice", "prices:\n  openai/gpt-5: {input: 1}\n  openai/gpt-5: {input: 2}\n"),
		{name: "a file that does not exist", config: "missing.yml"},
		yamlCase("every problem at once", `# agentfix.yml
listen_addr: :8080
max_step: 10
max_duration: 45
allow_unsandboxed: maybe
webhook_secret: s3cret
prices:
  openai/gpt-5:
    inptu: 1.25
    cache_read: free
`),
	})
}

// TestDotEnvMessages fixes the text of every problem of the .env file.
func TestDotEnvMessages(t *testing.T) {
	dotEnv := func(name, content string) configCase {
		return configCase{name: name, files: map[string]string{DotEnvFile: content}}
	}
	goldenCases(t, "dotenv_errors.golden", []configCase{
		dotEnv("a line without =", "AGENTFIX_MODEL=openai/gpt-5\nAGENTFIX_APP_ID\n"),
		dotEnv("a secret pasted on a line of its own is not quoted back", "OPENAI_API_KEY=\nsk-proj-hunter2\n"),
		dotEnv("a name that is not a variable", "AGENTFIX-MODEL=openai/gpt-5\n"),
		dotEnv("a quote never closed", "AGENTFIX_MODEL=openai/gpt-5\nAGENTFIX_WEBHOOK_SECRET='hunter2\nAGENTFIX_LOG_LEVEL=debug\n"),
		dotEnv("text after the closing quote", "AGENTFIX_TRIGGER_LABEL=\"agent\" fix\n"),
		dotEnv("a value of the wrong type", "# limits\nAGENTFIX_MAX_STEPS=lots\nAGENTFIX_MAX_DURATION=45\n"),
		dotEnv("a variable that names no setting", "AGENTFIX_MODLE=openai/gpt-5\n"),
		dotEnv("a value out of range", "AGENTFIX_MODEL=openai/gpt-5\nAGENTFIX_LOG_LEVEL=loud\n"),
		{name: "readable by others", files: map[string]string{DotEnvFile: "AGENTFIX_MODEL=openai/gpt-5\n"}, chmod: map[string]os.FileMode{DotEnvFile: 0o644}},
		dotEnv("every problem at once, the good lines still read", `AGENTFIX_MODEL=openai/gpt-5
AGENTFIX_APP_ID
export AGENTFIX_MAX_STEPS=lots
AGENTFIX_PRIVATE_KEY="-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEA
-----END RSA PRIVATE KEY-----
AGENTFIX_MAX_DURATION=45
`),
	})
}

// TestEnvironmentMessages fixes the text of every problem of the process
// environment.
func TestEnvironmentMessages(t *testing.T) {
	env := func(name string, environ ...string) configCase {
		return configCase{name: name, environ: environ}
	}
	goldenCases(t, "environment_errors.golden", []configCase{
		env("a variable with letters swapped", "AGENTFIX_MODLE=openai/gpt-5"),
		env("a variable of a provider SDK with the prefix", "AGENTFIX_OPENAI_API_KEY=sk-test"),
		env("a variable a platform injected", "AGENTFIX_PORT=tcp://10.0.0.1:80", "AGENTFIX_SERVICE_HOST=10.0.0.1"),
		env("a variable for a setting of the YAML file only", "AGENTFIX_PRICES=openai/gpt-5:1.25"),
		env("a whole number", "AGENTFIX_MAX_STEPS=lots"),
		env("true or false", "AGENTFIX_ALLOW_UNSANDBOXED=yes please"),
		env("a number", "AGENTFIX_MAX_COST_USD=$3"),
		env("a duration without a unit", "AGENTFIX_MAX_DURATION=45"),
		env("a duration in words", "AGENTFIX_RUN_RETENTION=two weeks"),
		env("a Redis address without a scheme", "AGENTFIX_REDIS_URL=localhost:6379"),
		env("a Redis service name without a scheme", "AGENTFIX_REDIS_URL=redis:6379"),
		env("a Redis address with a password and no scheme", "AGENTFIX_REDIS_URL=default:hunter2@redis.internal:6379"),
		env("a Redis URL of another scheme", "AGENTFIX_REDIS_URL=http://localhost:6379"),
		env("a Redis URL without a host", "AGENTFIX_REDIS_URL=redis://"),
		env("a Redis URL that does not parse", "AGENTFIX_REDIS_URL=redis://:hunter2@[::1"),
		env("every problem at once", "AGENTFIX_MODLE=openai/gpt-5", "AGENTFIX_MAX_STEPS=lots", "AGENTFIX_MAX_DURATION=45"),
	})
}

// TestValidateMessages fixes the text of the semantic checks, with the line
// that set a value when a file did.
func TestValidateMessages(t *testing.T) {
	goldenCases(t, "validate_errors.golden", []configCase{
		yamlCase("out of range, from the YAML file", "max_steps: 0\nlog_format: xml\n"),
		{name: "out of range, from .env", files: map[string]string{DotEnvFile: "AGENTFIX_LOG_LEVEL=loud\n"}},
		{name: "out of range, from the environment over the YAML file", files: map[string]string{"agentfix.yml": "max_steps: 10\n"}, config: "agentfix.yml", environ: []string{"AGENTFIX_MAX_STEPS=0"}},
		yamlCase("a price out of range", "prices:\n  gpt-5: {input: -1}\n"),
		{name: "an App id without a key", environ: []string{"AGENTFIX_APP_ID=12345", "AGENTFIX_WEBHOOK_SECRET=s"}},
		{name: "a key without an App id", files: map[string]string{DotEnvFile: "AGENTFIX_PRIVATE_KEY_FILE=app.pem\nAGENTFIX_WEBHOOK_SECRET=s\n", "app.pem": "not a key"}},
		{name: "the unsandboxed sandbox without its opt-in", environ: []string{"AGENTFIX_SANDBOX=none"}},
		{name: "the docker sandbox without an image", environ: []string{"AGENTFIX_SANDBOX=docker"}},
		{name: "a listen address without a port", environ: []string{"AGENTFIX_LISTEN_ADDR=8080"}},
		{name: "a model without its provider", environ: []string{"AGENTFIX_MODEL=gpt-5"}},
	})
}

// TestDidYouMean checks the suggestions for a misspelt key or variable:
// each line is exact, so a message without its suggestion fails.
func TestDidYouMean(t *testing.T) {
	tests := []struct {
		name string
		c    configCase
		want []string
	}{
		{
			name: "yaml key",
			c:    yamlCase("", "max_step: 10\n"),
			want: []string{"agentfix.yml:1:1: max_step: unknown key; did you mean max_steps?"},
		},
		{
			name: "yaml key with letters swapped",
			c:    yamlCase("", "modle: openai/gpt-5\n"),
			want: []string{"agentfix.yml:1:1: modle: unknown key; did you mean model?"},
		},
		{
			name: "key of a price",
			c:    yamlCase("", "prices:\n  openai/gpt-5:\n    inptu: 1\n"),
			want: []string{"agentfix.yml:3:5: prices: openai/gpt-5: inptu: unknown key; did you mean input?"},
		},
		{
			name: "environment variable",
			c:    configCase{environ: []string{"AGENTFIX_MODLE=openai/gpt-5"}},
			want: []string{"warning: AGENTFIX_MODLE names no setting and is ignored; did you mean AGENTFIX_MODEL?"},
		},
		{
			name: "variable in .env",
			c:    configCase{files: map[string]string{DotEnvFile: "AGENTFIX_MAX_STEP=10\n"}},
			want: []string{"warning: $WORKDIR/.env:1: AGENTFIX_MAX_STEP names no setting and is ignored; did you mean AGENTFIX_MAX_STEPS?"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.c.messages(t)); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("repository file", func(t *testing.T) {
		_, err := ParseRepo([]byte("tset: make test\n"))
		want := []string{RepoFile + ":1: tset: unknown key; did you mean test?"}
		if diff := cmp.Diff(want, problemLines(t, err)); diff != "" {
			t.Errorf("ParseRepo problems (-want +got):\n%s", diff)
		}
	})
}

// TestEveryProblemAtOnce checks that problems in the YAML file, .env and
// the environment are all reported by one Load, in that order, each in
// file order.
func TestEveryProblemAtOnce(t *testing.T) {
	c := configCase{
		files: map[string]string{
			"agentfix.yml": "max_step: 10\nmax_duration: 45\nwebhook_secret: s\n",
			DotEnvFile:     "AGENTFIX_APP_ID\nAGENTFIX_MAX_COST_USD=lots\n",
		},
		config:  "agentfix.yml",
		environ: []string{"AGENTFIX_RUN_RETENTION=forever"},
	}
	want := []string{
		"agentfix.yml:1:1: max_step: unknown key; did you mean max_steps?",
		"agentfix.yml:2:15: max_duration: must be a duration such as 45m or 1h30m, got the number 45 (give a unit, like 45m)",
		"agentfix.yml:3:1: webhook_secret: is a secret, which may not be in this file; set AGENTFIX_WEBHOOK_SECRET in the environment or in .env instead",
		"$WORKDIR/.env:1: expected KEY=value; the line has no =",
		`$WORKDIR/.env:2: AGENTFIX_MAX_COST_USD: must be a number such as 2.5, got "lots"`,
		`AGENTFIX_RUN_RETENTION: must be a duration such as 45m or 1h30m, got "forever"`,
	}
	if diff := cmp.Diff(want, c.messages(t)); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

// TestEveryFieldHasAKind makes a setting of a type the loader cannot read
// fail here rather than at startup.
func TestEveryFieldHasAKind(t *testing.T) {
	check := func(t *testing.T, fs []field) {
		for _, f := range fs {
			if _, ok := valueKinds[f.value.Type()]; !ok {
				t.Errorf("setting %s has type %s, which valueKinds lacks", f.key, f.value.Type())
			}
		}
	}
	check(t, fields(Defaults()))
	var p Price
	check(t, structFields(reflect.ValueOf(&p).Elem()))
}
