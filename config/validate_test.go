package config

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testKey returns a fresh RSA private key in PEM (PKCS#1), as GitHub issues them.
func testKey(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

func TestValidate(t *testing.T) {
	key := testKey(t)
	dir := t.TempDir()
	keyFile := writeFile(t, dir, "app.pem", key, 0o600)
	notKey := writeFile(t, dir, "notkey.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", 0o600)
	app := func(a *App) {
		a.AppID, a.PrivateKey, a.WebhookSecret = 1, key, "s3cret"
	}
	tests := []struct {
		name   string
		modify func(a *App)
		want   []string
	}{
		{name: "defaults are setup mode", modify: func(*App) {}},
		{name: "complete app", modify: app},
		{name: "key file", modify: func(a *App) { a.AppID, a.PrivateKeyFile, a.WebhookSecret = 1, keyFile, "s" }},
		{
			name:   "id without key",
			modify: func(a *App) { a.AppID, a.WebhookSecret = 7, "s" },
			want:   []string{"AGENTFIX_PRIVATE_KEY: required when AGENTFIX_APP_ID is set (or set AGENTFIX_PRIVATE_KEY_FILE)"},
		},
		{
			name:   "key without id",
			modify: func(a *App) { a.PrivateKey, a.WebhookSecret = key, "s" },
			want:   []string{"AGENTFIX_APP_ID: required when a private key is configured (the App's id is on its settings page)"},
		},
		{
			name:   "app without webhook secret",
			modify: func(a *App) { a.AppID, a.PrivateKey = 1, key },
			want:   []string{"AGENTFIX_WEBHOOK_SECRET: required when the GitHub App is configured (/webhook is never served without it)"},
		},
		{
			name:   "both key forms",
			modify: func(a *App) { app(a); a.PrivateKeyFile = keyFile },
			want:   []string{"AGENTFIX_PRIVATE_KEY_FILE: set either AGENTFIX_PRIVATE_KEY or AGENTFIX_PRIVATE_KEY_FILE, not both"},
		},
		{
			name:   "missing key file",
			modify: func(a *App) { a.AppID, a.WebhookSecret, a.PrivateKeyFile = 1, "s", filepath.Join(dir, "missing.pem") },
			want:   []string{"AGENTFIX_PRIVATE_KEY_FILE: read private key: open " + filepath.Join(dir, "missing.pem") + ": no such file or directory"},
		},
		{
			name:   "key file not a key",
			modify: func(a *App) { a.AppID, a.WebhookSecret, a.PrivateKeyFile = 1, "s", notKey },
			want:   []string{`AGENTFIX_PRIVATE_KEY_FILE: PEM block "CERTIFICATE" is not an RSA private key`},
		},
		{
			name:   "inline key garbage",
			modify: func(a *App) { app(a); a.PrivateKey = "hello" },
			want:   []string{"AGENTFIX_PRIVATE_KEY: not a PEM-encoded private key"},
		},
		{
			name: "everything wrong at once",
			modify: func(a *App) {
				a.ListenAddr = "8080"
				a.PublicURL = "bot.example.com"
				a.GitHubAPIURL = "ftp://x/"
				a.RedisURL = "http://localhost:6379"
				a.Model = "gpt-5"
				a.Sandbox = "chroot"
				a.TriggerLabel = ""
				a.Command = "agent-fix"
				a.AgentConcurrency = 0
				a.MaxSteps = 0
				a.MaxCostUSD = 0
				a.MaxDuration = -1
				a.LogFormat = "xml"
				a.LogLevel = "loud"
				a.AdminToken = "short"
				a.Prices = map[string]Price{"gpt-5": {Input: -1}}
			},
			want: []string{
				`AGENTFIX_LISTEN_ADDR: must be host:port or :port, got "8080"`,
				`AGENTFIX_PUBLIC_URL: must be an absolute http(s) URL, got "bot.example.com"`,
				`AGENTFIX_GITHUB_API_URL: must be an absolute http(s) URL, got "ftp://x/"`,
				`AGENTFIX_ADMIN_TOKEN: must be at least 16 characters long`,
				`AGENTFIX_REDIS_URL: must be a URL such as redis://localhost:6379/0 (the scheme redis, rediss or redis-sentinel), got "http://localhost:6379"`,
				`AGENTFIX_MODEL: must be provider/model, e.g. openai/gpt-5 or anthropic/claude-sonnet-4-5, got "gpt-5"`,
				`prices: key "gpt-5" must be provider/model like AGENTFIX_MODEL`,
				`prices: gpt-5: prices may not be negative`,
				`AGENTFIX_SANDBOX: must be bwrap, docker or none, got "chroot"`,
				`AGENTFIX_TRIGGER_LABEL: must be a GitHub label name (1 to 50 characters, no surrounding spaces), got ""`,
				`AGENTFIX_COMMAND: must be a slash and a word, like /agent-fix, got "agent-fix"`,
				`AGENTFIX_AGENT_CONCURRENCY: must be at least 1, got 0`,
				`AGENTFIX_MAX_STEPS: must be at least 1, got 0`,
				`AGENTFIX_MAX_COST_USD: must be more than 0, got 0`,
				`AGENTFIX_MAX_DURATION: must be more than 0, got -1ns`,
				`AGENTFIX_LOG_FORMAT: must be auto, json or text, got "xml"`,
				`AGENTFIX_LOG_LEVEL: must be debug, info, warn or error, got "loud"`,
			},
		},
		{
			name:   "listen port out of range",
			modify: func(a *App) { a.ListenAddr = "127.0.0.1:99999" },
			want:   []string{`AGENTFIX_LISTEN_ADDR: must be host:port or :port, got "127.0.0.1:99999"`},
		},
		{
			name:   "unsandboxed needs the opt-in",
			modify: func(a *App) { a.Sandbox = "none" },
			want:   []string{"AGENTFIX_SANDBOX: none runs the agent's commands on the host; it also needs AGENTFIX_ALLOW_UNSANDBOXED=true (development only)"},
		},
		{
			name:   "unsandboxed with the opt-in",
			modify: func(a *App) { a.Sandbox, a.AllowUnsandboxed = "none", true },
		},
		{
			name:   "docker needs an image",
			modify: func(a *App) { a.Sandbox = "docker" },
			want:   []string{"AGENTFIX_SANDBOX_IMAGE: required when AGENTFIX_SANDBOX is docker: the container image the agent's commands run in, with the repositories' toolchains"},
		},
		{
			name:   "an image that is no reference",
			modify: func(a *App) { a.SandboxImage = "REPLACE_ME" },
			want:   []string{`AGENTFIX_SANDBOX_IMAGE: must be an image reference, e.g. registry.example.com/agentfix-sandbox@sha256:… (build deploy/sandbox.Dockerfile and pin its digest), got "REPLACE_ME"`},
		},
		{
			name: "an image pinned by digest",
			modify: func(a *App) {
				a.SandboxImage = "registry.example.com/agentfix-sandbox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
			},
		},
		{
			name:   "docker with an image",
			modify: func(a *App) { a.Sandbox, a.SandboxImage = "docker", "ghcr.io/example/toolchain:1" },
		},
		{
			name:   "redis url forms",
			modify: func(a *App) { a.RedisURL = "redis-sentinel://h1:26379,h2:26379?master=mymaster" },
		},
		{
			name:   "redis url without host",
			modify: func(a *App) { a.RedisURL = "redis://" },
			want:   []string{`AGENTFIX_REDIS_URL: has no host: must be a URL such as redis://localhost:6379/0 (the scheme redis, rediss or redis-sentinel), got "redis://"`},
		},
		{
			name:   "redis address without a scheme",
			modify: func(a *App) { a.RedisURL = "localhost:6379" },
			want:   []string{`AGENTFIX_REDIS_URL: must be a URL such as redis://localhost:6379/0 (the scheme redis, rediss or redis-sentinel), got "localhost:6379"; did you mean redis://localhost:6379?`},
		},
		{
			name:   "redis address without a scheme keeps its password out",
			modify: func(a *App) { a.RedisURL = "user:hunter2@localhost:6379" },
			want:   []string{`AGENTFIX_REDIS_URL: must be a URL such as redis://localhost:6379/0 (the scheme redis, rediss or redis-sentinel), got "user:xxxxx@localhost:6379"; did you mean redis://user:xxxxx@localhost:6379?`},
		},
		{
			name: "warnings follow the problems",
			modify: func(a *App) {
				a.MaxSteps, a.warnings = 0, []string{"AGENTFIX_MODLE names no setting and is ignored; did you mean AGENTFIX_MODEL?"}
			},
			want: []string{"AGENTFIX_MAX_STEPS: must be at least 1, got 0", "AGENTFIX_MODLE names no setting and is ignored; did you mean AGENTFIX_MODEL?"},
		},
		{
			name:   "warnings alone are no error",
			modify: func(a *App) { a.warnings = []string{"AGENTFIX_MODLE names no setting and is ignored"} },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Defaults()
			tt.modify(a)
			err := a.Validate()
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate() lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetupMode(t *testing.T) {
	tests := []struct {
		name   string
		modify func(a *App)
		want   bool
	}{
		{name: "nothing", modify: func(*App) {}, want: true},
		{name: "only a webhook secret", modify: func(a *App) { a.WebhookSecret = "s" }, want: true},
		{name: "app id", modify: func(a *App) { a.AppID = 1 }, want: false},
		{name: "key file", modify: func(a *App) { a.PrivateKeyFile = "/k.pem" }, want: false},
		{name: "inline key", modify: func(a *App) { a.PrivateKey = "k" }, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Defaults()
			tt.modify(a)
			if got := a.SetupMode(); got != tt.want {
				t.Errorf("SetupMode() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLogValueRedactsSecrets(t *testing.T) {
	a := Defaults()
	a.WebhookSecret, a.AdminToken, a.OpenAIAPIKey, a.AppID = "hunter2-webhook", "hunter2-admin-token", "sk-hunter2", 9
	a.RedisURL = "redis://default:hunter2-redis@redis.internal:6379/0"
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("config", "config", a)
	out := b.String()
	for _, secret := range []string{"hunter2-webhook", "hunter2-admin-token", "sk-hunter2", "hunter2-redis"} {
		if strings.Contains(out, secret) {
			t.Errorf("log output contains secret %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{"config.webhook_secret=[redacted]", "config.app_id=9", "config.private_key=\"\"", "config.listen_addr=:8080", "config.redis_url=redis://default:xxxxx@redis.internal:6379/0"} {
		if !strings.Contains(out, want) {
			t.Errorf("log output lacks %q:\n%s", want, out)
		}
	}
}
