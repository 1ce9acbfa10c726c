package config

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Validate checks the configuration as a whole. The error joins every
// problem, one line each starting with the variable it is about and, when
// the value came from a file, ending with the key and line it is at, then
// the Warnings, so an operator can fix them all in one go.
func (a *App) Validate() error {
	p := problems{origins: a.origins}
	a.validateHTTP(&p)
	a.validateApp(&p)
	a.validateRedis(&p)
	a.validateAgent(&p)
	a.validateLimits(&p)
	switch a.LogFormat {
	case "auto", "json", "text":
	default:
		p.add("AGENTFIX_LOG_FORMAT", "must be auto, json or text, got %q", a.LogFormat)
	}
	for _, c := range []struct {
		name  string
		value any
		neg   bool
	}{
		{"AGENTFIX_WEBHOOK_MAX_INFLIGHT_BYTES", a.WebhookMaxInflightBytes, a.WebhookMaxInflightBytes < 0},
		{"AGENTFIX_WEBHOOK_MAX_CLIENT_INFLIGHT_BYTES", a.WebhookMaxClientInflightBytes, a.WebhookMaxClientInflightBytes < 0},
		{"AGENTFIX_WEBHOOK_BODY_TIMEOUT", a.WebhookBodyTimeout, a.WebhookBodyTimeout < 0},
		{"AGENTFIX_WEBHOOK_BODY_TIMEOUT_PER_MIB", a.WebhookBodyTimeoutPerMiB, a.WebhookBodyTimeoutPerMiB < 0},
		{"AGENTFIX_IMAGE_CACHE_BYTES", a.ImageCacheBytes, a.ImageCacheBytes < 0},
		{"AGENTFIX_SETUP_CACHE_BYTES", a.SetupCacheBytes, a.SetupCacheBytes < 0},
	} {
		if c.neg {
			p.add(c.name, "must not be negative, got %v", c.value)
		}
	}
	switch a.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		p.add("AGENTFIX_LOG_LEVEL", "must be debug, info, warn or error, got %q", a.LogLevel)
	}
	if len(p.errs) == 0 {
		return nil
	}
	return a.withWarnings(p.errs)
}

// problems collects validation errors.
type problems struct {
	errs    []error
	origins map[string]origin // App.origins
}

// add records a problem with the setting named variable (its YAML key for
// the settings that are YAML only), pointing at the line that set it.
func (p *problems) add(variable, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if o, ok := p.origins[variable]; ok {
		msg += " (from " + o.String() + ")"
	}
	p.errs = append(p.errs, fmt.Errorf("%s: %s", variable, msg))
}

func (a *App) validateHTTP(p *problems) {
	if _, port, err := net.SplitHostPort(a.ListenAddr); err != nil || !validPort(port) {
		p.add("AGENTFIX_LISTEN_ADDR", "must be host:port or :port, got %q", a.ListenAddr)
	}
	if a.PublicURL != "" {
		checkHTTPURL(p, "AGENTFIX_PUBLIC_URL", a.PublicURL)
	}
	checkHTTPURL(p, "AGENTFIX_GITHUB_API_URL", a.GitHubAPIURL)
	checkHTTPURL(p, "AGENTFIX_GITHUB_WEB_URL", a.GitHubWebURL)
	if a.AdminToken != "" && len(a.AdminToken) < 16 {
		p.add("AGENTFIX_ADMIN_TOKEN", "must be at least 16 characters long")
	}
}

// validateApp checks the GitHub App identity: none at all is setup mode,
// a part of it is an error.
func (a *App) validateApp(p *problems) {
	if a.AppID < 0 {
		p.add("AGENTFIX_APP_ID", "must be a positive number, got %d", a.AppID)
	}
	if a.SetupMode() {
		return
	}
	hasKey := a.PrivateKey != "" || a.PrivateKeyFile != ""
	switch {
	case a.AppID == 0:
		p.add("AGENTFIX_APP_ID", "required when a private key is configured (the App's id is on its settings page)")
	case !hasKey:
		p.add("AGENTFIX_PRIVATE_KEY", "required when AGENTFIX_APP_ID is set (or set AGENTFIX_PRIVATE_KEY_FILE)")
	}
	if a.PrivateKey != "" && a.PrivateKeyFile != "" {
		p.add("AGENTFIX_PRIVATE_KEY_FILE", "set either AGENTFIX_PRIVATE_KEY or AGENTFIX_PRIVATE_KEY_FILE, not both")
	} else if hasKey {
		variable := "AGENTFIX_PRIVATE_KEY"
		if a.PrivateKeyFile != "" {
			variable = "AGENTFIX_PRIVATE_KEY_FILE"
		}
		if err := checkPrivateKey(a); err != nil {
			p.add(variable, "%v", err)
		}
	}
	if a.WebhookSecret == "" {
		p.add("AGENTFIX_WEBHOOK_SECRET", "required when the GitHub App is configured (/webhook is never served without it)")
	}
}

// checkPrivateKey makes sure the key parses as GitHub App keys do: a PEM
// RSA private key in PKCS#1 or PKCS#8.
func checkPrivateKey(a *App) error {
	b, err := a.PrivateKeyPEM()
	if err != nil {
		return err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return fmt.Errorf("not a PEM-encoded private key")
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return nil
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		return nil
	}
	return fmt.Errorf("PEM block %q is not an RSA private key", block.Type)
}

// redisForm is what AGENTFIX_REDIS_URL must look like.
const redisForm = "a URL such as redis://localhost:6379/0 (the scheme redis, rediss or redis-sentinel)"

func (a *App) validateRedis(p *problems) {
	const variable = "AGENTFIX_REDIS_URL"
	s := a.RedisURL
	if s == "" {
		return
	}
	if !strings.Contains(s, "://") {
		p.add(variable, "must be %s, got %q; did you mean redis://%s?", redisForm, redactPassword(s), redactPassword(s))
		return
	}
	u, err := url.Parse(s)
	if err != nil {
		p.add(variable, "must be %s: %v", redisForm, redactURLError(err))
		return
	}
	switch u.Scheme {
	case "redis", "rediss", "redis-sentinel":
	default:
		p.add(variable, "must be %s, got %q", redisForm, redactPassword(s))
		return
	}
	if u.Host == "" {
		p.add(variable, "has no host: must be %s, got %q", redisForm, redactPassword(s))
	}
}

var (
	modelName   = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*/\S+$`)
	commandWord = regexp.MustCompile(`^/[A-Za-z0-9][A-Za-z0-9_-]*$`)
)

func (a *App) validateAgent(p *problems) {
	if a.Model != "" && !modelName.MatchString(a.Model) {
		p.add("AGENTFIX_MODEL", "must be provider/model, e.g. openai/gpt-5 or anthropic/claude-sonnet-4-5, got %q", a.Model)
	}
	keys := make([]string, 0, len(a.Prices))
	for k := range a.Prices {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pr := a.Prices[k]
		if !modelName.MatchString(k) {
			p.add("prices", "key %q must be provider/model like AGENTFIX_MODEL", k)
		}
		if pr.Input < 0 || pr.Output < 0 || pr.CacheRead < 0 || pr.CacheWrite < 0 {
			p.add("prices", "%s: prices may not be negative", k)
		}
	}
	if a.SandboxImage != "" {
		if !IsImageReference(a.SandboxImage) {
			p.add("AGENTFIX_SANDBOX_IMAGE", "must be an image reference, e.g. registry.example.com/agentfix-sandbox@sha256:… (build deploy/sandbox.Dockerfile and pin its digest), got %q", a.SandboxImage)
		}
	}
	switch a.Sandbox {
	case "bwrap":
	case "docker":
		if a.SandboxImage == "" {
			p.add("AGENTFIX_SANDBOX_IMAGE", "required when AGENTFIX_SANDBOX is docker: the container image the agent's commands run in, with the repositories' toolchains")
		}
	case "none":
		if !a.AllowUnsandboxed {
			p.add("AGENTFIX_SANDBOX", "none runs the agent's commands on the host; it also needs AGENTFIX_ALLOW_UNSANDBOXED=true (development only)")
		}
	default:
		p.add("AGENTFIX_SANDBOX", "must be bwrap, docker or none, got %q", a.Sandbox)
	}
	if a.DataDir == "" {
		p.add("AGENTFIX_DATA_DIR", "may not be empty")
	}
	if l := a.TriggerLabel; l == "" || len(l) > 50 || strings.TrimSpace(l) != l {
		p.add("AGENTFIX_TRIGGER_LABEL", "must be a GitHub label name (1 to 50 characters, no surrounding spaces), got %q", l)
	}
	if !commandWord.MatchString(a.Command) {
		p.add("AGENTFIX_COMMAND", "must be a slash and a word, like /agent-fix, got %q", a.Command)
	}
}

func (a *App) validateLimits(p *problems) {
	if a.AgentConcurrency < 1 {
		p.add("AGENTFIX_AGENT_CONCURRENCY", "must be at least 1, got %d", a.AgentConcurrency)
	}
	if a.InteractiveConcurrency < 1 {
		p.add("AGENTFIX_INTERACTIVE_CONCURRENCY", "must be at least 1, got %d", a.InteractiveConcurrency)
	}
	if a.MaxSteps < 1 {
		p.add("AGENTFIX_MAX_STEPS", "must be at least 1, got %d", a.MaxSteps)
	}
	if a.MaxCostUSD <= 0 {
		p.add("AGENTFIX_MAX_COST_USD", "must be more than 0, got %g", a.MaxCostUSD)
	}
	if a.MaxDuration <= 0 {
		p.add("AGENTFIX_MAX_DURATION", "must be more than 0, got %s", a.MaxDuration)
	}
	if a.RepoDailyUSD <= 0 {
		p.add("AGENTFIX_REPO_DAILY_USD", "must be more than 0, got %g", a.RepoDailyUSD)
	}
	if a.InstallationDailyUSD <= 0 {
		p.add("AGENTFIX_INSTALLATION_DAILY_USD", "must be more than 0, got %g", a.InstallationDailyUSD)
	}
	if a.RunRetention <= 0 {
		p.add("AGENTFIX_RUN_RETENTION", "must be more than 0, got %s", a.RunRetention)
	}
}

func checkHTTPURL(p *problems, variable, s string) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.add(variable, "must be an absolute http(s) URL, got %q", s)
	}
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && n <= 65535
}

// hasPassword reports whether the URL s carries a password; when s is not
// a URL with a host, whether it has an @ at all.
func hasPassword(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return strings.Contains(s, "@")
	}
	_, ok := u.User.Password()
	return ok
}

// redactPassword replaces the password of the URL s (or of a host:port
// with user:password@ in front) with xxxxx.
func redactPassword(s string) string {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return s
	}
	scheme, rest, ok := strings.Cut(s[:at], "://")
	if !ok {
		scheme, rest = "", scheme
	} else {
		scheme += "://"
	}
	user, _, ok := strings.Cut(rest, ":")
	if !ok {
		return s
	}
	return scheme + user + ":xxxxx" + s[at:]
}

// redactURLError drops the URL (which may carry a password) from a parse error.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
