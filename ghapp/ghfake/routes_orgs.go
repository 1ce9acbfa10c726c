package ghfake

import (
	"net/http"
	"strings"
	"time"
)

// routeOrgs serves team memberships and the lookup of a repository's
// installation.
func (f *Fake) routeOrgs(mux *http.ServeMux) {
	mux.HandleFunc("GET /orgs/{org}/teams/{slug}/memberships/{user}", f.getTeamMembership)
	mux.HandleFunc("GET /repos/{owner}/{repo}/installation", f.appAuth(f.getRepoInstallation))
}

// AddTeamMember makes login a member of the team slug of org, with state
// "active" or "pending" (an invitation not yet accepted).
func (f *Fake) AddTeamMember(org, slug, login, state string) {
	f.t.Helper()
	if state != "active" && state != "pending" {
		f.fatalf("team membership state must be active or pending, got %q", state)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := strings.ToLower(org + "/" + slug)
	if f.teams[key] == nil {
		f.teams[key] = map[string]string{}
	}
	f.teams[key][strings.ToLower(login)] = state
}

// getTeamMembership serves GET /orgs/{org}/teams/{slug}/memberships/{user}
// to a current token of an installation on org; a team or member it does
// not know is 404, as on GitHub.
func (f *Fake) getTeamMembership(w http.ResponseWriter, r *http.Request) {
	org := r.PathValue("org")
	f.mu.Lock()
	defer f.mu.Unlock()
	tok := f.tokens[bearer(r)]
	if tok == nil || !time.Now().Before(tok.expires) {
		writeError(w, http.StatusUnauthorized, "Bad credentials")
		return
	}
	inst := f.installations[tok.installation]
	if inst == nil || inst.suspended || !strings.EqualFold(inst.account, org) {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	state, ok := f.teams[strings.ToLower(org+"/"+r.PathValue("slug"))][strings.ToLower(r.PathValue("user"))]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"role": "member", "state": state})
}

// getRepoInstallation serves GET /repos/{owner}/{repo}/installation: the
// installation that covers the repository, or 404.
func (f *Fake) getRepoInstallation(w http.ResponseWriter, r *http.Request) {
	key := strings.ToLower(r.PathValue("owner") + "/" + r.PathValue("repo"))
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, inst := range f.installations {
		if inst.repos[key] && !inst.suspended {
			writeJSON(w, http.StatusOK, map[string]any{"id": inst.id, "account": f.userJSON(inst.account)})
			return
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
}
