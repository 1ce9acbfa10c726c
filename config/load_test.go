package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// writeFile writes content to dir/name with the given mode and returns the path.
func writeFile(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadDefaults(t *testing.T) {
	dir := t.TempDir()
	got, err := Load("", nil, dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Defaults()
	want.DataDir = filepath.Join(dir, "data")
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(App{})); diff != "" {
		t.Errorf("Load with nothing configured (-want +got):\n%s", diff)
	}
	if !got.SetupMode() {
		t.Errorf("SetupMode() = false with no App configured, want true")
	}
}

func TestLoadPrecedence(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		dotEnv  string
		environ []string
		want    string
	}{
		{name: "default", want: ""},
		{name: "yaml", yaml: "model: openai/from-yaml\n", want: "openai/from-yaml"},
		{name: "dotenv over yaml", yaml: "model: openai/from-yaml\n", dotEnv: "AGENTFIX_MODEL=openai/from-dotenv\n", want: "openai/from-dotenv"},
		{name: "environment over dotenv", yaml: "model: openai/from-yaml\n", dotEnv: "AGENTFIX_MODEL=openai/from-dotenv\n", environ: []string{"AGENTFIX_MODEL=openai/from-env"}, want: "openai/from-env"},
		{name: "empty variable counts as unset", yaml: "model: openai/from-yaml\n", environ: []string{"AGENTFIX_MODEL="}, want: "openai/from-yaml"},
		{name: "last duplicate wins", environ: []string{"AGENTFIX_MODEL=openai/a", "AGENTFIX_MODEL=openai/b"}, want: "openai/b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var yamlPath string
			if tt.yaml != "" {
				yamlPath = writeFile(t, dir, "agentfix.yml", tt.yaml, 0o644)
			}
			if tt.dotEnv != "" {
				writeFile(t, dir, DotEnvFile, tt.dotEnv, 0o600)
			}
			a, err := Load(yamlPath, tt.environ, dir)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if a.Model != tt.want {
				t.Errorf("Model = %q, want %q", a.Model, tt.want)
			}
		})
	}
}

func TestLoadEveryType(t *testing.T) {
	dir := t.TempDir()
	yamlPath := writeFile(t, dir, "agentfix.yml", `
listen_addr: 127.0.0.1:9000
max_duration: 10m
max_cost_usd: 1.5
allow_unpriced_model: true
prices:
  openai/gpt-5:
    input: 1.25
    output: 10
    cache_read: 0.125
`, 0o644)
	environ := []string{
		"AGENTFIX_APP_ID=42",
		"AGENTFIX_MAX_STEPS=10",
		"AGENTFIX_RUN_RETENTION=24h",
		"AGENTFIX_ALLOW_UNSANDBOXED=true",
		"AGENTFIX_SANDBOX_IMAGE=ghcr.io/example/toolchain:1",
		"AGENTFIX_REPO_DAILY_USD=7.5",
		"AGENTFIX_GITHUB_API_URL=https://ghe.example/api/v3",
		"AGENTFIX_PRIVATE_KEY_FILE=keys/app.pem",
		"OPENAI_BASE_URL=http://127.0.0.1:11434/v1",
		"AGENTFIX_LOG_LEVEL=DEBUG",
	}
	a, err := Load(yamlPath, environ, dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Defaults()
	want.DataDir = filepath.Join(dir, "data")
	want.ListenAddr = "127.0.0.1:9000"
	want.MaxDuration = 10 * time.Minute
	want.MaxCostUSD = 1.5
	want.AllowUnpricedModel = true
	want.Prices = map[string]Price{"openai/gpt-5": {Input: 1.25, Output: 10, CacheRead: 0.125}}
	want.AppID = 42
	want.MaxSteps = 10
	want.RunRetention = 24 * time.Hour
	want.AllowUnsandboxed = true
	want.SandboxImage = "ghcr.io/example/toolchain:1"
	want.RepoDailyUSD = 7.5
	want.GitHubAPIURL = "https://ghe.example/api/v3/"
	want.PrivateKeyFile = filepath.Join(dir, "keys", "app.pem")
	want.OpenAIBaseURL = "http://127.0.0.1:11434/v1"
	want.LogLevel = "debug"
	if diff := cmp.Diff(want, a, cmpopts.IgnoreUnexported(App{})); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
}

func TestLoadMissingYAML(t *testing.T) {
	_, err := Load("nope.yml", nil, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "nope.yml") {
		t.Errorf("Load of a missing file: err = %v, want an error naming nope.yml", err)
	}
}

func TestWarnings(t *testing.T) {
	dir := t.TempDir()
	dotEnv := writeFile(t, dir, DotEnvFile, "AGENTFIX_MODLE=openai/gpt-5\n", 0o644)
	if err := os.Chmod(dotEnv, 0o644); err != nil { // undo the umask
		t.Fatal(err)
	}
	a, err := Load("", []string{"AGENTFIX_PORT=tcp://10.0.0.1:80", "AGENTFIX_CONFIG=x.yml", "HOME=/root"}, dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := []string{
		dotEnv + " is readable by others (mode 0644) and may hold secrets; chmod 600 it",
		dotEnv + ":1: AGENTFIX_MODLE names no setting and is ignored; did you mean AGENTFIX_MODEL?",
		"AGENTFIX_PORT names no setting and is ignored",
	}
	if diff := cmp.Diff(want, a.Warnings()); diff != "" {
		t.Errorf("Warnings() (-want +got):\n%s", diff)
	}
}

func TestPrivateKeyEscapedNewlines(t *testing.T) {
	key := testKey(t)
	oneLine := strings.ReplaceAll(key, "\n", `\n`)
	dir := t.TempDir()
	writeFile(t, dir, DotEnvFile, "AGENTFIX_PRIVATE_KEY='"+oneLine+"'\n", 0o600)
	a, err := Load("", nil, dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	got, err := a.PrivateKeyPEM()
	if err != nil {
		t.Fatalf("PrivateKeyPEM: %v", err)
	}
	if string(got) != key {
		t.Errorf("PrivateKeyPEM() = %q, want the key with real newlines", got)
	}
}
