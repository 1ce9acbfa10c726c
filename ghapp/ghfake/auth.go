package ghfake

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

// installation is an installation of the App on an account.
type installation struct {
	id        int64
	account   string
	repos     map[string]bool // lower-case "owner/name"
	suspended bool
}

// token is an installation access token the fake issued.
type token struct {
	value        string
	installation int64
	repos        []string // lower-case "owner/name"; nil: the installation's
	expires      time.Time
}

// grants reports whether t is current at now and reaches repo (lower-case
// "owner/name"), given the installations. Callers hold f.mu.
func (f *Fake) grants(t *token, repo string, now time.Time) bool {
	if t == nil || !now.Before(t.expires) {
		return false
	}
	inst := f.installations[t.installation]
	if inst == nil || inst.suspended || !inst.repos[repo] {
		return false
	}
	return t.repos == nil || slices.Contains(t.repos, repo)
}

// Install creates installation id (or extends it) with access to repos,
// which must exist.
func (f *Fake) Install(id int64, repos ...string) {
	f.t.Helper()
	if id <= 0 {
		f.fatalf("installation id must be positive, got %d", id)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	inst := f.installations[id]
	if inst == nil {
		inst = &installation{id: id, repos: map[string]bool{}}
		f.installations[id] = inst
	}
	for _, full := range repos {
		rp := f.repos[strings.ToLower(full)]
		if rp == nil {
			f.fatalf("install %d: no repository %q; call NewRepo first", id, full)
		}
		if inst.account == "" {
			inst.account = rp.owner
		}
		inst.repos[strings.ToLower(full)] = true
	}
}

// SuspendInstallation suspends installation id: its tokens stop working and
// no new ones are issued.
func (f *Fake) SuspendInstallation(id int64) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	inst := f.installations[id]
	if inst == nil {
		f.fatalf("suspend: no installation %d", id)
	}
	inst.suspended = true
}

// SetTokenTTL sets the lifetime of tokens issued from now on (GitHub's is
// one hour, the default).
func (f *Fake) SetTokenTTL(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokenTTL = d
}

// ExpireTokens makes every token issued so far expired: the API answers 401
// and the git server refuses them.
func (f *Fake) ExpireTokens() {
	f.mu.Lock()
	defer f.mu.Unlock()
	past := time.Now().Add(-time.Second)
	for _, t := range f.tokens {
		t.expires = past
	}
}

// IssuedTokens returns every installation token issued so far, oldest
// first, so a test can check that none leaked into files or logs.
func (f *Fake) IssuedTokens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.issued...)
}

// TokenInfo describes an installation token the fake issued.
type TokenInfo struct {
	Installation int64
	// Repos lists the repositories (lower-case "owner/name") the token is
	// limited to; nil for a token of the whole installation.
	Repos     []string
	ExpiresAt time.Time
}

// Token describes token value, and reports whether the fake issued it.
func (f *Fake) Token(value string) (TokenInfo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tokens[value]
	if t == nil {
		return TokenInfo{}, false
	}
	return TokenInfo{Installation: t.installation, Repos: slices.Clone(t.repos), ExpiresAt: t.expires}, true
}

// bearer returns the credential of an "Authorization: Bearer|token X"
// header.
func bearer(r *http.Request) string {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || (!strings.EqualFold(scheme, "bearer") && !strings.EqualFold(scheme, "token")) {
		return ""
	}
	return strings.TrimSpace(cred)
}

// checkJWT verifies an App JWT as GitHub does: RS256 with the App's key,
// issuer the App id, issued no later than a minute from now, expiring in
// the future but at most ten minutes after now.
func (f *Fake) checkJWT(raw string) error {
	if raw == "" {
		return errors.New("a JSON web token is required")
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) {
		return &f.key.PublicKey, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithoutClaimsValidation())
	if err != nil {
		return fmt.Errorf("a JSON web token could not be decoded: %v", err)
	}
	var iss string
	switch v := claims["iss"].(type) {
	case string:
		iss = v
	case float64:
		iss = strconv.FormatInt(int64(v), 10)
	}
	if iss != strconv.FormatInt(f.appID, 10) {
		return fmt.Errorf("'Issuer' claim ('iss') must be the App id %d", f.appID)
	}
	now := time.Now()
	iat, okI := claims["iat"].(float64)
	exp, okE := claims["exp"].(float64)
	if !okI || !okE {
		return errors.New("'Issued at' and 'Expiration time' claims are required")
	}
	if time.Unix(int64(iat), 0).After(now.Add(time.Minute)) {
		return errors.New("'Issued at' claim ('iat') must be an Integer representing a time in the past")
	}
	if !time.Unix(int64(exp), 0).After(now) {
		return errors.New("'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires")
	}
	if time.Unix(int64(exp), 0).After(now.Add(10*time.Minute + 30*time.Second)) {
		return errors.New("'Expiration time' claim ('exp') is too far in the future")
	}
	return nil
}

// appAuth wraps an App endpoint: it answers 401 unless the request carries
// a valid JWT.
func (f *Fake) appAuth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := f.checkJWT(bearer(r)); err != nil {
			writeError(w, http.StatusUnauthorized, err.Error())
			return
		}
		h(w, r)
	}
}

// repoHandler serves a repository endpoint with f.mu held.
type repoHandler func(w http.ResponseWriter, r *http.Request, rp *repo, tok *token)

// repoAuth wraps a repository endpoint: it finds the repository of the
// {owner}/{repo} path and requires a current installation token that
// reaches it (401 for a missing, unknown or expired token; 404 for a
// repository out of its reach, as GitHub hides it). It holds f.mu while h
// runs.
func (f *Fake) repoAuth(h repoHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		tok := f.installationToken(w, r)
		if tok == nil {
			return
		}
		key := strings.ToLower(r.PathValue("owner") + "/" + r.PathValue("repo"))
		rp := f.repos[key]
		if rp == nil || !f.grants(tok, key, time.Now()) {
			writeError(w, http.StatusNotFound, "Not Found")
			return
		}
		h(w, r, rp, tok)
	}
}

// installationToken returns the current installation token r carries, or
// answers 401 as GitHub does for a missing, unknown or expired one and
// returns nil. Callers hold f.mu.
func (f *Fake) installationToken(w http.ResponseWriter, r *http.Request) *token {
	cred := bearer(r)
	if cred == "" {
		writeError(w, http.StatusUnauthorized, "Requires authentication")
		return nil
	}
	tok := f.tokens[cred]
	if tok == nil || !time.Now().Before(tok.expires) {
		writeError(w, http.StatusUnauthorized, "Bad credentials")
		return nil
	}
	return tok
}

// issueToken serves POST /app/installations/{id}/access_tokens.
func (f *Fake) issueToken(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	var req struct {
		Repositories  []string `json:"repositories"`
		RepositoryIDs []int64  `json:"repository_ids"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	inst := f.installations[id]
	if inst == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if inst.suspended {
		writeError(w, http.StatusForbidden, "This installation has been suspended")
		return
	}
	var scope []string
	for _, name := range req.Repositories {
		key := strings.ToLower(inst.account + "/" + name)
		if !inst.repos[key] {
			writeError(w, http.StatusUnprocessableEntity, "There is at least one repository that does not exist or is not accessible to the parent installation.")
			return
		}
		scope = append(scope, key)
	}
	for _, rid := range req.RepositoryIDs {
		key := f.repoKeyByID(rid)
		if key == "" || !inst.repos[key] {
			writeError(w, http.StatusUnprocessableEntity, "There is at least one repository that does not exist or is not accessible to the parent installation.")
			return
		}
		scope = append(scope, key)
	}
	buf := make([]byte, 20)
	if _, err := rand.Read(buf); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	t := &token{
		value:        "ghs_" + hex.EncodeToString(buf),
		installation: id,
		repos:        scope,
		expires:      time.Now().Add(f.tokenTTL).Truncate(time.Second),
	}
	f.tokens[t.value] = t
	f.issued = append(f.issued, t.value)
	out := map[string]any{
		"token":                t.value,
		"expires_at":           t.expires.UTC().Format(time.RFC3339),
		"permissions":          map[string]string{"contents": "write", "issues": "write", "pull_requests": "write", "checks": "write", "metadata": "read"},
		"repository_selection": "all",
	}
	if scope != nil {
		out["repository_selection"] = "selected"
		var repos []any
		for _, key := range scope {
			repos = append(repos, f.repos[key].json(f))
		}
		out["repositories"] = repos
	}
	writeJSON(w, http.StatusCreated, out)
}

// repoKeyByID finds a repository by id. Callers hold f.mu.
func (f *Fake) repoKeyByID(id int64) string {
	for key, rp := range f.repos {
		if rp.id == id {
			return key
		}
	}
	return ""
}
