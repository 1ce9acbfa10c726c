package ghapp_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/ghapp/ghfake"
)

func TestIsTeamMember(t *testing.T) {
	e := setup(t)
	e.f.AddTeamMember("acme", "maintainers", "alice", "active")
	e.f.AddTeamMember("acme", "maintainers", "bob", "pending")
	tests := []struct {
		name, org, slug, login string
		want                   bool
	}{
		{"active member", "acme", "maintainers", "alice", true},
		{"case-insensitive", "ACME", "Maintainers", "Alice", true},
		{"pending invitation", "acme", "maintainers", "bob", false},
		{"not a member", "acme", "maintainers", "carol", false},
		{"no such team", "acme", "admins", "alice", false},
		{"another organization", "other", "maintainers", "alice", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.client.IsTeamMember(context.Background(), tt.org, tt.slug, tt.login)
			if err != nil || got != tt.want {
				t.Errorf("IsTeamMember(%s/%s, %s) = %v, %v; want %v", tt.org, tt.slug, tt.login, got, err, tt.want)
			}
		})
	}
	e.f.Inject(ghfake.Fault{Method: http.MethodGet, Path: "/orgs/acme/teams/maintainers/memberships/alice",
		Status: http.StatusForbidden, Body: `{"message":"Resource not accessible by integration"}`})
	if _, err := e.client.IsTeamMember(context.Background(), "acme", "maintainers", "alice"); ghapp.HTTPStatus(err) != http.StatusForbidden {
		t.Errorf("IsTeamMember without members: read = %v, want the 403", err)
	}
}
