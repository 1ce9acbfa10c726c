package config

import (
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"time"
)

// App is the operator's configuration of one bot process. The yaml tag is the
// YAML key; the environment variable is AGENTFIX_<KEY> unless an env tag names
// it; fields tagged secret:"true" may not appear in YAML and are redacted in
// logs, fields tagged secret:"password" are URLs whose password is. A new
// setting is a field here (its type one of valueKinds), its default in
// Defaults and its checks in Validate; loading, messages and logs follow
// from the field.
type App struct {
	// ListenAddr is the HTTP address of serve, webhook and worker.
	ListenAddr string `yaml:"listen_addr"`
	// PublicURL is the bot's public base URL; empty means "from the request".
	PublicURL string `yaml:"public_url"`
	// WebhookSecret is the HMAC secret of webhook deliveries.
	WebhookSecret string `yaml:"webhook_secret" secret:"true"`

	// AppID is the GitHub App's id; zero with no key means setup mode.
	AppID int64 `yaml:"app_id"`
	// PrivateKey is the App's PEM private key, inline.
	PrivateKey string `yaml:"private_key" secret:"true"`
	// PrivateKeyFile is a path to the App's PEM private key, relative to the
	// working directory.
	PrivateKeyFile string `yaml:"private_key_file"`
	// GitHubAPIURL is the REST base URL, always ending in a slash.
	GitHubAPIURL string `yaml:"github_api_url"`
	// GitHubWebURL is the web base URL, always ending in a slash.
	GitHubWebURL string `yaml:"github_web_url"`

	// RedisURL is a redis://, rediss:// or redis-sentinel:// URL; empty makes
	// serve embed an in-process Redis and makes webhook and worker refuse to
	// start.
	RedisURL string `yaml:"redis_url" secret:"password"`
	// DataDir holds the repository cache, working copies and run records; it
	// is made absolute against the working directory.
	DataDir string `yaml:"data_dir"`

	// Model is "provider/model", e.g. "openai/gpt-5".
	Model string `yaml:"model"`
	// AllowUnpricedModel lets a model missing from the price table run; its
	// budgets then count tokens only.
	AllowUnpricedModel bool `yaml:"allow_unpriced_model"`
	// CheckModel makes the worker, serve and bot fix prove the model
	// provider's key with a cheap authenticated call at startup.
	CheckModel bool `yaml:"check_model"`
	// Prices overrides the embedded price table, keyed like Model.
	Prices map[string]Price `yaml:"prices"`
	// OpenAIAPIKey is the OpenAI-compatible provider's key.
	OpenAIAPIKey string `yaml:"openai_api_key" env:"OPENAI_API_KEY" secret:"true"`
	// OpenAIBaseURL points the OpenAI provider at any compatible server.
	OpenAIBaseURL string `yaml:"openai_base_url" env:"OPENAI_BASE_URL"`
	// AnthropicAPIKey is the Anthropic provider's key.
	AnthropicAPIKey string `yaml:"anthropic_api_key" env:"ANTHROPIC_API_KEY" secret:"true"`
	// AnthropicBaseURL points the Anthropic provider at a compatible server.
	AnthropicBaseURL string `yaml:"anthropic_base_url" env:"ANTHROPIC_BASE_URL"`

	// Sandbox is bwrap, docker or none.
	Sandbox string `yaml:"sandbox"`
	// AllowUnsandboxed must be true for Sandbox "none".
	AllowUnsandboxed bool `yaml:"allow_unsandboxed"`
	// SandboxImage is the operator's default container image for the
	// agent's commands, used when a repository names none (image: in its
	// .github/agent-fix.yml, or its devcontainer.json): bwrap runs in its
	// unpacked root, docker runs it. Required when Sandbox is docker;
	// empty for bwrap means the worker's own system.
	SandboxImage string `yaml:"sandbox_image"`
	// ImageCacheBytes bounds the disk the unpacked images take under the
	// data directory (least recently used evicted past it; 0: 20 GiB).
	ImageCacheBytes int64 `yaml:"image_cache_bytes"`
	// SetupCacheBytes bounds the disk the warm setup caches kept between
	// jobs of a repository take (0: 10 GiB).
	SetupCacheBytes int64 `yaml:"setup_cache_bytes"`
	// AllowUnenforcedLimits lets the worker run the bwrap sandbox where
	// the kernel cannot enforce its per-job limits (memory, processes,
	// disk; workspace.CheckLimits says which and why).
	AllowUnenforcedLimits bool `yaml:"allow_unenforced_limits"`
	// SetupEgress narrows where setup commands may connect: a
	// comma-separated list of hosts, host:port or IPv4 addresses (empty:
	// the internet, but never this host, its networks, link-local or
	// private ranges).
	SetupEgress string `yaml:"setup_egress"`

	// WebhookMaxInflightBytes bounds the memory of the webhook bodies
	// being read at once, WebhookMaxClientInflightBytes one client's share
	// of it (0: the edge's defaults, 100 MiB and a quarter).
	WebhookMaxInflightBytes       int64 `yaml:"webhook_max_inflight_bytes"`
	WebhookMaxClientInflightBytes int64 `yaml:"webhook_max_client_inflight_bytes"`
	// WebhookBodyTimeout is how long a body may take to start arriving,
	// WebhookBodyTimeoutPerMiB how much longer each MiB gives it (0: 5 s
	// and 2 s).
	WebhookBodyTimeout       time.Duration `yaml:"webhook_body_timeout"`
	WebhookBodyTimeoutPerMiB time.Duration `yaml:"webhook_body_timeout_per_mib"`

	// TriggerLabel is the issue label that starts a fix.
	TriggerLabel string `yaml:"trigger_label"`
	// Command is the slash command, e.g. "/agent-fix".
	Command string `yaml:"command"`

	// AgentConcurrency is the number of agent slots per worker process.
	AgentConcurrency int `yaml:"agent_concurrency"`
	// InteractiveConcurrency is the number of interactive slots per worker.
	InteractiveConcurrency int `yaml:"interactive_concurrency"`

	// AdminToken is the bearer token of /admin/*; empty disables those routes.
	AdminToken string `yaml:"admin_token" secret:"true"`

	// MaxSteps bounds the agent's steps per job.
	MaxSteps int `yaml:"max_steps"`
	// MaxCostUSD bounds the model spend per job.
	MaxCostUSD float64 `yaml:"max_cost_usd"`
	// MaxDuration bounds the wall time of the agent per job.
	MaxDuration time.Duration `yaml:"max_duration"`
	// RepoDailyUSD is the budget per repository per UTC day.
	RepoDailyUSD float64 `yaml:"repo_daily_usd"`
	// InstallationDailyUSD is the budget per installation per UTC day.
	InstallationDailyUSD float64 `yaml:"installation_daily_usd"`
	// RunRetention is how long run records and trajectories are kept.
	RunRetention time.Duration `yaml:"run_retention"`

	// LogFormat is auto (text on a terminal, JSON otherwise), json or
	// text.
	LogFormat string `yaml:"log_format"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level"`

	// warnings are problems that do not stop startup.
	warnings []string
	// origins says where the values that did not come from the defaults or
	// the process environment came from, by field name, for Validate.
	origins map[string]origin
}

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Input      float64 `yaml:"input"`
	Output     float64 `yaml:"output"`
	CacheRead  float64 `yaml:"cache_read"`
	CacheWrite float64 `yaml:"cache_write"`
}

// Defaults returns the built-in configuration (DESIGN.md §3).
func Defaults() *App {
	return &App{
		ListenAddr:             ":8080",
		GitHubAPIURL:           "https://api.github.com/",
		GitHubWebURL:           "https://github.com/",
		DataDir:                "./data",
		Sandbox:                "bwrap",
		TriggerLabel:           "agent-fix",
		Command:                "/agent-fix",
		AgentConcurrency:       2,
		InteractiveConcurrency: 4,
		MaxSteps:               75,
		MaxCostUSD:             3.00,
		MaxDuration:            45 * time.Minute,
		RepoDailyUSD:           20,
		InstallationDailyUSD:   100,
		RunRetention:           336 * time.Hour,
		LogFormat:              "auto",
		LogLevel:               "info",
		CheckModel:             true,
	}
}

// SetupMode reports whether neither an App id nor a private key is
// configured: serve then offers only the health endpoints and /setup.
func (a *App) SetupMode() bool {
	return a.AppID == 0 && a.PrivateKey == "" && a.PrivateKeyFile == ""
}

// PrivateKeyPEM returns the App's private key, read from PrivateKeyFile when
// the key is not given inline.
func (a *App) PrivateKeyPEM() ([]byte, error) {
	if a.PrivateKey != "" {
		return []byte(a.PrivateKey), nil
	}
	if a.PrivateKeyFile == "" {
		return nil, fmt.Errorf("no private key configured")
	}
	b, err := os.ReadFile(a.PrivateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("read private key: %w", err)
	}
	return b, nil
}

// Warnings lists problems found while loading that do not stop startup —
// AGENTFIX_* variables that name no setting (typos, or variables a platform
// such as Kubernetes injected), a .env file readable by others — so the
// caller can log them.
func (a *App) Warnings() []string { return a.warnings }

// LogValue renders the configuration for logs with every secret redacted.
func (a *App) LogValue() slog.Value {
	var attrs []slog.Attr
	for _, f := range fields(a) {
		v := f.value.Interface()
		switch {
		case f.secret && !f.value.IsZero():
			v = "[redacted]"
		case f.urlPassword && hasPassword(f.value.String()):
			v = redactPassword(f.value.String())
		case f.value.Kind() == reflect.Map:
			v = f.value.Len()
		}
		attrs = append(attrs, slog.Any(f.key, v))
	}
	return slog.GroupValue(attrs...)
}

// field is one setting of App (or a key of a mapping in it, such as a
// Price) as the loader sees it.
type field struct {
	key         string        // YAML key
	env         string        // environment variable
	secret      bool          // may not be in YAML; redacted in logs
	urlPassword bool          // a URL whose password may not be in YAML; redacted in logs
	value       reflect.Value // settable
}

// name is what messages call the setting: its variable, or its YAML key
// when it is YAML only.
func (f field) name() string {
	if valueKinds[f.value.Type()].parse == nil {
		return f.key
	}
	return f.env
}

// fields lists the settings of a, in declaration order.
func fields(a *App) []field { return structFields(reflect.ValueOf(a).Elem()) }

// structFields lists the fields of the struct v that have a yaml tag, in
// declaration order.
func structFields(v reflect.Value) []field {
	t := v.Type()
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		key := strings.Split(sf.Tag.Get("yaml"), ",")[0]
		if key == "" || key == "-" {
			continue
		}
		env := sf.Tag.Get("env")
		if env == "" {
			env = EnvPrefix + strings.ToUpper(key)
		}
		out = append(out, field{
			key: key, env: env, value: v.Field(i),
			secret:      sf.Tag.Get("secret") == "true",
			urlPassword: sf.Tag.Get("secret") == "password",
		})
	}
	return out
}
