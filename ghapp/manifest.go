package ghapp

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// appManifest is a GitHub App manifest, the JSON the /setup page posts to
// GitHub to create the App ("Registering a GitHub App from a manifest" in
// GitHub's documentation). deploy/github-app-manifest.json is the same
// manifest with placeholder URLs; a test keeps the two in step.
type appManifest struct {
	Name               string            `json:"name"`
	URL                string            `json:"url"`
	Description        string            `json:"description"`
	HookAttributes     hookAttributes    `json:"hook_attributes"`
	RedirectURL        string            `json:"redirect_url"`
	Public             bool              `json:"public"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
}

// hookAttributes is the manifest's webhook.
type hookAttributes struct {
	URL    string `json:"url"`
	Active bool   `json:"active"`
}

// manifestOptions are what the operator chooses on /setup.
type manifestOptions struct {
	// Name is the App's name, unique on GitHub.
	Name string
	// BaseURL is the bot's public base URL, without a trailing slash: the
	// App's homepage, BaseURL/webhook its webhook and
	// BaseURL/setup/callback the redirect after creation.
	BaseURL string
	// Members adds the organization permission members: read, which
	// allowed_teams in a repository's config needs.
	Members bool
	// Workflows adds workflows: write, without which GitHub refuses pushes
	// that change .github/workflows/.
	Workflows bool
	// Actions raises actions: read to actions: write, with which the bot
	// re-runs failed GitHub Actions jobs before it works on them
	// (ci.rerun_failed in a repository's config).
	Actions bool
}

// permission is one permission the App asks for, and why.
type permission struct {
	Name, Access, Why string
	// Optional permissions are chosen on /setup and off by default.
	Optional bool
}

// permissions lists what the App may ask for: the required ones, then the
// optional ones (DESIGN.md §4, §9). An optional permission may raise a
// required one of the same name (actions: read to write).
func permissions() []permission {
	return []permission{
		{Name: "contents", Access: "write", Why: "clone repositories and push the fix branches"},
		{Name: "issues", Access: "write", Why: "read issues, react, and post and edit the status comment"},
		{Name: "pull_requests", Access: "write", Why: "open and update pull requests, request reviews and reply to reviews"},
		{Name: "checks", Access: "write", Why: "report each job as the agentfix check run, and read the checks of its pull requests to fix those that fail"},
		{Name: "actions", Access: "read", Why: "read the logs of the GitHub Actions jobs that fail on its pull requests"},
		{Name: "metadata", Access: "read", Why: "required by GitHub for every App"},
		{Name: "members", Access: "read", Why: "check allowed_teams of a repository's .github/agent-fix.yml", Optional: true},
		{Name: "workflows", Access: "write", Why: "push changes to .github/workflows/, which repositories must also allow; workflows on the bot's branch run with the repository's secrets", Optional: true},
		{Name: "actions", Access: "write", Why: "re-run failed GitHub Actions jobs of its pull requests once before working on them, where a repository asks for it (ci.rerun_failed), to tell flaky checks from broken ones", Optional: true},
	}
}

// events lists the webhook events the App subscribes to; installation events
// arrive without subscribing. check_suite and check_run tell the bot its
// pull requests' checks completed, push that a default branch moved.
func events() []string {
	return []string{"issues", "issue_comment", "pull_request_review", "pull_request_review_comment", "check_suite", "check_run", "push"}
}

// newManifest returns the manifest of the App o describes.
func newManifest(o manifestOptions) appManifest {
	perms := map[string]string{}
	for _, p := range permissions() {
		switch {
		case !p.Optional, p.Name == "members" && o.Members, p.Name == "workflows" && o.Workflows, p.Name == "actions" && o.Actions:
			perms[p.Name] = p.Access
		}
	}
	return appManifest{
		Name:               o.Name,
		URL:                o.BaseURL,
		Description:        "Fixes issues with an LLM coding agent and opens pull requests with the changes (agentfix).",
		HookAttributes:     hookAttributes{URL: o.BaseURL + "/webhook", Active: true},
		RedirectURL:        o.BaseURL + "/setup/callback",
		Public:             false,
		DefaultPermissions: perms,
		DefaultEvents:      events(),
	}
}

// encode returns the manifest as indented JSON with a final newline, the
// form of deploy/github-app-manifest.json. HTML characters are left as they
// are; the pages escape them.
func (m appManifest) encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("encode app manifest: %w", err)
	}
	return b.Bytes(), nil
}
