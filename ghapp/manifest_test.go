package ghapp

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata and deploy/github-app-manifest.json")

// deployManifest is the manifest operators can use by hand, with
// placeholder URLs.
var deployManifest = filepath.Join("..", "deploy", "github-app-manifest.json")

// TestDeployManifestMatches keeps deploy/github-app-manifest.json equal to
// the manifest /setup builds with the default choices, so the two never
// drift apart.
func TestDeployManifestMatches(t *testing.T) {
	got, err := newManifest(manifestOptions{Name: "agentfix", BaseURL: "https://agentfix.example.com"}).encode()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(deployManifest, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(deployManifest)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from the manifest /setup builds (-file +built); run go test ./ghapp -run DeployManifest -update:\n%s", deployManifest, diff)
	}
}

func TestManifestPermissions(t *testing.T) {
	required := map[string]string{"contents": "write", "issues": "write", "pull_requests": "write", "checks": "write", "actions": "read", "metadata": "read"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range required {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name string
		opts manifestOptions
		want map[string]string
	}{
		{"defaults", manifestOptions{}, required},
		{"members", manifestOptions{Members: true}, with(map[string]string{"members": "read"})},
		{"workflows", manifestOptions{Workflows: true}, with(map[string]string{"workflows": "write"})},
		{"both", manifestOptions{Members: true, Workflows: true}, with(map[string]string{"members": "read", "workflows": "write"})},
		{"actions: write raises actions: read", manifestOptions{Actions: true}, with(map[string]string{"actions": "write"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Name, tt.opts.BaseURL = "a", "https://bot.example.com"
			m := newManifest(tt.opts)
			if diff := cmp.Diff(tt.want, m.DefaultPermissions); diff != "" {
				t.Errorf("permissions (-want +got):\n%s", diff)
			}
			wantURLs := []string{"https://bot.example.com", "https://bot.example.com/webhook", "https://bot.example.com/setup/callback"}
			if diff := cmp.Diff(wantURLs, []string{m.URL, m.HookAttributes.URL, m.RedirectURL}); diff != "" {
				t.Errorf("url, webhook url, redirect url (-want +got):\n%s", diff)
			}
			if m.Public || !m.HookAttributes.Active {
				t.Errorf("public = %v, hook active = %v; want a private App with an active webhook", m.Public, m.HookAttributes.Active)
			}
			if diff := cmp.Diff([]string{"issues", "issue_comment", "pull_request_review", "pull_request_review_comment", "check_suite", "check_run", "push"}, m.DefaultEvents); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
