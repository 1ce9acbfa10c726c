package deploy_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentfix/agentfix/config"
)

// placeholder marks a value the operator must replace; the templates use it
// for every secret and for the App id.
const placeholder = "REPLACE_ME"

// testValues stand in for the placeholders when the tests check that a
// filled-in template makes a valid configuration.
var testValues = map[string]string{
	"AGENTFIX_APP_ID":         "12345",
	"AGENTFIX_WEBHOOK_SECRET": "test-webhook-secret",
	"AGENTFIX_ADMIN_TOKEN":    "test-admin-token-0123456789",
	"OPENAI_API_KEY":          "sk-test",
	"ANTHROPIC_API_KEY":       "sk-ant-test",
	"REDIS_PASSWORD":          "test-redis-password",
	"AGENTFIX_SANDBOX_IMAGE":  "registry.example/agentfix-sandbox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
}

// checkConfig checks the environment env that a deployed process gets the
// way the bot does at startup (config.Load, then Validate):
//   - as shipped, with its placeholders, the configuration is refused and
//     the error names AGENTFIX_APP_ID, so an unedited template cannot start;
//   - with the placeholders filled in and the private key file pointing at a
//     real key, it loads and validates;
//   - every variable names a setting of the bot (none is ignored).
func checkConfig(t *testing.T, env map[string]string) {
	t.Helper()
	dir := t.TempDir()
	if _, err := config.Load("", environ(env), dir); err == nil || !strings.Contains(err.Error(), "AGENTFIX_APP_ID") {
		t.Errorf("config.Load with the placeholders: got error %v, want one naming AGENTFIX_APP_ID", err)
	}

	filled := map[string]string{}
	for k, v := range env {
		if v == placeholder {
			tv, ok := testValues[k]
			if !ok {
				t.Fatalf("%s=%s: the tests have no stand-in value for it; add one to testValues", k, placeholder)
			}
			v = tv
		}
		filled[k] = v
	}
	if _, ok := filled["AGENTFIX_PRIVATE_KEY_FILE"]; ok {
		filled["AGENTFIX_PRIVATE_KEY_FILE"] = writeTestKey(t, dir)
	}
	cfg, err := config.Load("", environ(filled), dir)
	if err != nil {
		t.Fatalf("config.Load with the placeholders filled in:\n%v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate with the placeholders filled in:\n%v", err)
	}
	if w := cfg.Warnings(); len(w) > 0 {
		t.Errorf("config warnings: %q, want none", w)
	}
	checkNames(t, cfg, env)
}

// checkSettingNames checks that every variable of env names a setting,
// without requiring the whole configuration to be valid.
func checkSettingNames(t *testing.T, env map[string]string) {
	t.Helper()
	cfg, err := config.Load("", environ(env), t.TempDir())
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	checkNames(t, cfg, env)
}

// checkNames checks that every variable of env names a setting of cfg: a
// variable is AGENTFIX_<KEY>, or for the provider SDKs the key itself in
// upper case (config's env tags), and cfg's log rendering lists every key.
func checkNames(t *testing.T, cfg *config.App, env map[string]string) {
	t.Helper()
	keys := map[string]bool{}
	for _, a := range cfg.LogValue().Group() {
		keys[a.Key] = true
	}
	for _, name := range sortedKeys(env) {
		if key := strings.ToLower(strings.TrimPrefix(name, config.EnvPrefix)); !keys[key] {
			t.Errorf("%s names no setting of the bot (config.App has no key %q)", name, key)
		}
	}
}

func environ(env map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(env) {
		out = append(out, k+"="+env[k])
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeTestKey writes a fresh RSA private key in PEM form, as GitHub issues
// them, into dir and returns its path.
func writeTestKey(t *testing.T, dir string) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	path := filepath.Join(dir, "private-key.pem")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
