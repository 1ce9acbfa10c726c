package ghapp_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/ghapp/ghfake"
)

func TestDefaultBranchFile(t *testing.T) {
	e := setup(t)
	e.f.Commit(widgetName, "feature", map[string]string{".github/agent-fix.yml": "test: make feature\n"}, "config on a branch")
	e.f.NewRepo("acme/.github", map[string]string{".github/agent-fix.yml": "test: make org\n"})
	e.f.NewRepo("acme/uncovered", map[string]string{".github/agent-fix.yml": "test: make hidden\n"})
	e.f.NewRepo("other/shared", map[string]string{"agentfix.yml": "test: make shared\n"})
	e.f.Install(installationID, "acme/.github")
	e.f.Install(installationID+1, "other/shared")
	org := ghapp.Repo{Owner: "acme", Name: ".github"}
	tests := []struct {
		name         string
		installation int64
		repo         ghapp.Repo
		path         string
		want         string
		found        bool
		// read is set when the file's contents are asked for.
		read bool
	}{
		{"own file from the default branch", installationID, widget, ".github/agent-fix.yml", "test: go test ./...\n", true, true},
		{"missing file", installationID, ghapp.Repo{Owner: "acme", Name: "other"}, ".github/agent-fix.yml", "", false, true},
		{"organization repository looked up", 0, org, ".github/agent-fix.yml", "test: make org\n", true, true},
		{"repository the App is not installed on", 0, ghapp.Repo{Owner: "acme", Name: "uncovered"}, ".github/agent-fix.yml", "", false, false},
		{"installation that does not cover the repository", installationID, ghapp.Repo{Owner: "acme", Name: "uncovered"}, ".github/agent-fix.yml", "", false, false},
		{"another owner's installation", 0, ghapp.Repo{Owner: "other", Name: "shared"}, "agentfix.yml", "test: make shared\n", true, true},
		{"missing repository", 0, ghapp.Repo{Owner: "acme", Name: "gone"}, ".github/agent-fix.yml", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(e.f.Calls())
			data, found, err := e.app.DefaultBranchFile(context.Background(), tt.installation, tt.repo, tt.path)
			if err != nil {
				t.Fatalf("DefaultBranchFile: %v", err)
			}
			if string(data) != tt.want || found != tt.found {
				t.Errorf("DefaultBranchFile = %q, %v; want %q, %v", data, found, tt.want, tt.found)
			}
			// The contents were asked for with a token scoped to the
			// repository, at the default branch (no ref).
			var reads []string
			for _, c := range e.f.Calls()[before:] {
				if c.Method == http.MethodGet && c.Path == "/repos/"+tt.repo.String()+"/contents/"+tt.path {
					reads = append(reads, c.Query)
					if c.Auth != "token" {
						t.Errorf("contents read with %s auth, want an installation token", c.Auth)
					}
				}
			}
			var wantReads []string
			if tt.read {
				wantReads = []string{""}
			}
			if diff := cmp.Diff(wantReads, reads); diff != "" {
				t.Errorf("contents reads, by query (-want +got):\n%s", diff)
			}
		})
	}
	var scopes []string
	for _, s := range e.f.TokenScopes() {
		if len(s) != 1 {
			t.Errorf("a token was scoped to %v, want one repository", s)
			continue
		}
		scopes = append(scopes, s[0])
	}
	if diff := cmp.Diff([]string{widgetName, otherName, "acme/.github", "other/shared"}, scopes); diff != "" {
		t.Errorf("token scopes (-want +got):\n%s", diff)
	}
}

func TestDefaultBranchFileErrors(t *testing.T) {
	e := setup(t)
	e.f.Inject(ghfake.Fault{Method: http.MethodGet, Path: "/repos/acme/widget/contents/.github/agent-fix.yml",
		Status: http.StatusForbidden, Body: `{"message":"Resource not accessible by integration"}`})
	if _, _, err := e.app.DefaultBranchFile(context.Background(), installationID, widget, ".github/agent-fix.yml"); ghapp.HTTPStatus(err) != http.StatusForbidden {
		t.Errorf("DefaultBranchFile error = %v, want the 403", err)
	}
}
