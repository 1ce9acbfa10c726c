package ghfake_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/ghapp/ghfake"
)

// do sends a request to the fake and decodes a JSON answer into out (when
// not nil); it returns the status and the response headers.
func do(t *testing.T, method, url, auth, body string, out any) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, url, data, err)
		}
	}
	return resp.StatusCode, resp.Header
}

// signJWT signs an App JWT with key.
func signJWT(t *testing.T, key *rsa.PrivateKey, method jwt.SigningMethod, iss any, iat, exp time.Time) string {
	t.Helper()
	claims := jwt.MapClaims{"iss": iss, "iat": iat.Unix(), "exp": exp.Unix()}
	var k any = key
	if method == jwt.SigningMethodHS256 {
		k = []byte("shared secret")
	}
	s, err := jwt.NewWithClaims(method, claims).SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func appKey(t *testing.T, f *ghfake.Fake) *rsa.PrivateKey {
	t.Helper()
	key, err := jwt.ParseRSAPrivateKeyFromPEM(f.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestJWTChecks(t *testing.T) {
	f := ghfake.New(t)
	key := appKey(t, f)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tests := []struct {
		name string
		jwt  string
		want int
	}{
		{"valid, string issuer", signJWT(t, key, jwt.SigningMethodRS256, strconv.FormatInt(f.AppID(), 10), now.Add(-30*time.Second), now.Add(5*time.Minute)), http.StatusOK},
		{"valid, numeric issuer", signJWT(t, key, jwt.SigningMethodRS256, f.AppID(), now, now.Add(time.Minute)), http.StatusOK},
		{"other key", signJWT(t, other, jwt.SigningMethodRS256, f.AppID(), now, now.Add(time.Minute)), http.StatusUnauthorized},
		{"HS256", signJWT(t, key, jwt.SigningMethodHS256, f.AppID(), now, now.Add(time.Minute)), http.StatusUnauthorized},
		{"wrong issuer", signJWT(t, key, jwt.SigningMethodRS256, "1", now, now.Add(time.Minute)), http.StatusUnauthorized},
		{"expired", signJWT(t, key, jwt.SigningMethodRS256, f.AppID(), now.Add(-10*time.Minute), now.Add(-time.Minute)), http.StatusUnauthorized},
		{"expiry too far", signJWT(t, key, jwt.SigningMethodRS256, f.AppID(), now, now.Add(time.Hour)), http.StatusUnauthorized},
		{"issued in the future", signJWT(t, key, jwt.SigningMethodRS256, f.AppID(), now.Add(5*time.Minute), now.Add(8*time.Minute)), http.StatusUnauthorized},
		{"garbage", "a.b.c", http.StatusUnauthorized},
		{"none", "", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			auth := ""
			if tt.jwt != "" {
				auth = "Bearer " + tt.jwt
			}
			var out map[string]any
			status, _ := do(t, "GET", f.APIURL()+"app", auth, "", &out)
			if status != tt.want {
				t.Fatalf("GET /app = %d %v, want %d", status, out, tt.want)
			}
			if status == http.StatusOK && out["slug"] != f.AppSlug() {
				t.Errorf("slug = %v, want %q", out["slug"], f.AppSlug())
			}
		})
	}
}

// token asks the fake for an installation token with body.
func token(t *testing.T, f *ghfake.Fake, installation int64, body string) (int, map[string]any) {
	t.Helper()
	now := time.Now()
	auth := "Bearer " + signJWT(t, appKey(t, f), jwt.SigningMethodRS256, f.AppID(), now, now.Add(time.Minute))
	var out map[string]any
	status, _ := do(t, "POST", fmt.Sprintf("%sapp/installations/%d/access_tokens", f.APIURL(), installation), auth, body, &out)
	return status, out
}

func TestInstallationTokens(t *testing.T) {
	f := ghfake.New(t)
	f.NewRepo("acme/widget", map[string]string{"a": "a\n"})
	f.NewRepo("acme/other", map[string]string{"a": "a\n"})
	f.NewRepo("acme/private", map[string]string{"a": "a\n"}, ghfake.WithPrivate())
	f.Install(1, "acme/widget", "acme/other")
	var repo struct{ ID int64 }

	status, out := token(t, f, 1, `{"repositories":["widget"]}`)
	if status != http.StatusCreated || out["repository_selection"] != "selected" {
		t.Fatalf("scoped token = %d %v", status, out)
	}
	scoped := "token " + out["token"].(string)
	exp, err := time.Parse(time.RFC3339, out["expires_at"].(string))
	if err != nil || exp.Before(time.Now().Add(59*time.Minute)) {
		t.Errorf("expires_at = %v, %v; want an hour ahead", out["expires_at"], err)
	}
	if s, _ := do(t, "GET", f.APIURL()+"repos/acme/widget", scoped, "", &repo); s != http.StatusOK {
		t.Errorf("scoped token on its repository: %d, want 200", s)
	}
	if s, _ := do(t, "GET", f.APIURL()+"repos/acme/other", scoped, "", nil); s != http.StatusNotFound {
		t.Errorf("scoped token on another repository: %d, want 404", s)
	}

	status, out = token(t, f, 1, fmt.Sprintf(`{"repository_ids":[%d]}`, repo.ID))
	if status != http.StatusCreated {
		t.Fatalf("token by repository id = %d %v", status, out)
	}
	if s, _ := do(t, "GET", f.APIURL()+"repos/acme/other", "token "+out["token"].(string), "", nil); s != http.StatusNotFound {
		t.Errorf("token scoped by id on another repository: %d, want 404", s)
	}

	tests := []struct {
		name         string
		installation int64
		body         string
		want         int
	}{
		{"repository outside the installation", 1, `{"repositories":["private"]}`, http.StatusUnprocessableEntity},
		{"unknown installation", 2, "", http.StatusNotFound},
		{"malformed body", 1, `{"repositories":`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if status, out := token(t, f, tt.installation, tt.body); status != tt.want {
				t.Errorf("token = %d %v, want %d", status, out, tt.want)
			}
		})
	}

	t.Run("unscoped, then expired", func(t *testing.T) {
		f.SetTokenTTL(time.Minute)
		status, out := token(t, f, 1, "")
		if status != http.StatusCreated || out["repository_selection"] != "all" {
			t.Fatalf("token = %d %v", status, out)
		}
		auth := "Bearer " + out["token"].(string)
		for _, r := range []string{"acme/widget", "acme/other"} {
			if s, _ := do(t, "GET", f.APIURL()+"repos/"+r, auth, "", nil); s != http.StatusOK {
				t.Errorf("unscoped token on %s: %d, want 200", r, s)
			}
		}
		if s, _ := do(t, "GET", f.APIURL()+"repos/acme/private", auth, "", nil); s != http.StatusNotFound {
			t.Errorf("token on a repository outside the installation: %d, want 404", s)
		}
		f.ExpireTokens()
		if s, _ := do(t, "GET", f.APIURL()+"repos/acme/widget", auth, "", nil); s != http.StatusUnauthorized {
			t.Errorf("expired token: %d, want 401", s)
		}
		if s, _ := do(t, "GET", f.APIURL()+"repos/acme/widget", "", "", nil); s != http.StatusUnauthorized {
			t.Errorf("no token: %d, want 401", s)
		}
	})
}

func TestFaults(t *testing.T) {
	f := ghfake.New(t)
	tests := []struct {
		name     string
		status   int
		header   http.Header
		wantBody string
	}{
		{"primary rate limit", http.StatusForbidden, http.Header{"X-RateLimit-Remaining": {"0"}}, "API rate limit exceeded"},
		{"secondary rate limit", http.StatusForbidden, nil, "secondary rate limit"},
		{"429", http.StatusTooManyRequests, http.Header{"Retry-After": {"5"}}, "secondary rate limit"},
		{"5xx", http.StatusBadGateway, nil, "Server Error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.FailNext("GET", "/app", tt.status, tt.header)
			var out struct{ Message string }
			status, h := do(t, "GET", f.APIURL()+"app", "", "", &out)
			if status != tt.status || !strings.Contains(out.Message, tt.wantBody) {
				t.Errorf("answer = %d %q, want %d with %q", status, out.Message, tt.status, tt.wantBody)
			}
			for k, v := range tt.header {
				if h.Get(k) != v[0] {
					t.Errorf("header %s = %q, want %q", k, h.Get(k), v[0])
				}
			}
			// The fault fires once.
			if status, _ := do(t, "GET", f.APIURL()+"app", "", "", nil); status != http.StatusUnauthorized {
				t.Errorf("next answer = %d, want the normal 401", status)
			}
		})
	}
	calls := f.Calls()
	if len(calls) != 8 || calls[0].Path != "/app" || calls[0].Status != http.StatusForbidden || calls[0].Auth != "none" {
		t.Errorf("calls = %+v, want 8 recorded, the first a 403 on /app", calls)
	}
}

func TestManifestCodeConvertsOnce(t *testing.T) {
	f := ghfake.New(t)
	want := f.AddManifestCode("code-1")
	var got struct {
		ID            int64  `json:"id"`
		Slug          string `json:"slug"`
		PEM           string `json:"pem"`
		WebhookSecret string `json:"webhook_secret"`
	}
	if status, _ := do(t, "POST", f.APIURL()+"app-manifests/code-1/conversions", "", "", &got); status != http.StatusCreated {
		t.Fatalf("conversion = %d, want 201", status)
	}
	if diff := cmp.Diff(want, ghfake.ManifestConversion{ID: got.ID, Slug: got.Slug, PEM: got.PEM, WebhookSecret: got.WebhookSecret}); diff != "" {
		t.Errorf("conversion (-want +got):\n%s", diff)
	}
	if got.PEM != string(f.PrivateKeyPEM()) || got.WebhookSecret == "" {
		t.Error("the conversion does not carry the App's key and a webhook secret")
	}
	if status, _ := do(t, "POST", f.APIURL()+"app-manifests/code-1/conversions", "", "", nil); status != http.StatusNotFound {
		t.Errorf("second conversion = %d, want 404", status)
	}
	if status, _ := do(t, "POST", f.APIURL()+"app-manifests/unknown/conversions", "", "", nil); status != http.StatusNotFound {
		t.Errorf("unknown code = %d, want 404", status)
	}
}

func TestPaginationLinks(t *testing.T) {
	f := ghfake.New(t)
	f.NewRepo("acme/widget", map[string]string{"a": "a\n"})
	f.Install(1, "acme/widget")
	n := f.AddIssue("acme/widget", ghfake.Issue{Title: "t"})
	for i := range 5 {
		f.AddComment("acme/widget", n, "alice", strconv.Itoa(i))
	}
	_, out := token(t, f, 1, "")
	auth := "token " + out["token"].(string)
	url := fmt.Sprintf("%srepos/acme/widget/issues/%d/comments?per_page=2&page=2", f.APIURL(), n)
	var page []struct{ Body string }
	status, h := do(t, "GET", url, auth, "", &page)
	if status != http.StatusOK || len(page) != 2 || page[0].Body != "2" || page[1].Body != "3" {
		t.Fatalf("page 2 = %d %+v, want comments 2 and 3", status, page)
	}
	link := h.Get("Link")
	for _, want := range []string{`page=3&per_page=2>; rel="next"`, `page=3&per_page=2>; rel="last"`, `page=1&per_page=2>; rel="prev"`, "/api/v3/repos/acme/widget/issues/"} {
		if !strings.Contains(link, want) {
			t.Errorf("Link %q lacks %q", link, want)
		}
	}
}

func TestGraphQLMarkReady(t *testing.T) {
	f := ghfake.New(t)
	f.NewRepo("acme/widget", map[string]string{"a": "a\n"})
	f.NewRepo("acme/private", map[string]string{"a": "a\n"})
	f.Install(1, "acme/widget")
	f.Install(2, "acme/private")
	f.Commit("acme/widget", "topic", map[string]string{"b": "b\n"}, "b")
	n := f.AddPR("acme/widget", ghfake.PR{Title: "Topic", Head: "topic", Draft: true})
	f.Commit("acme/private", "topic", map[string]string{"b": "b\n"}, "b")
	hidden := f.AddPR("acme/private", ghfake.PR{Title: "Hidden", Head: "topic", Draft: true})
	_, out := token(t, f, 1, "")
	auth := "token " + out["token"].(string)

	var pr struct {
		NodeID string `json:"node_id"`
		Draft  bool   `json:"draft"`
	}
	if s, _ := do(t, "GET", fmt.Sprintf("%srepos/acme/widget/pulls/%d", f.APIURL(), n), auth, "", &pr); s != http.StatusOK || pr.NodeID == "" || !pr.Draft {
		t.Fatalf("pull request = %d %+v, want a draft with a node id", s, pr)
	}
	if pr.NodeID != f.PRs("acme/widget")[0].NodeID {
		t.Errorf("node_id %q is not the fake's %q", pr.NodeID, f.PRs("acme/widget")[0].NodeID)
	}
	mutation := func(id string) string {
		return fmt.Sprintf(`{"query":"mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }","variables":{"id":%q}}`, id)
	}
	type answer struct {
		Data struct {
			Mark *struct {
				PullRequest struct {
					Number  int  `json:"number"`
					IsDraft bool `json:"isDraft"`
				} `json:"pullRequest"`
			} `json:"markPullRequestReadyForReview"`
		} `json:"data"`
		Errors  []struct{ Type, Message string } `json:"errors"`
		Message string                           `json:"message"`
	}
	tests := []struct {
		name       string
		auth, body string
		wantStatus int
		wantError  string // in the first GraphQL error, or the message of a non-200 answer
	}{
		{"no token", "", mutation(pr.NodeID), http.StatusUnauthorized, "Requires authentication"},
		{"unknown token", "token ghs_nope", mutation(pr.NodeID), http.StatusUnauthorized, "Bad credentials"},
		{"malformed body", auth, `{"query":`, http.StatusBadRequest, "Problems parsing JSON"},
		{"another query", auth, `{"query":"query { viewer { login } }"}`, http.StatusOK, "ghfake serves only the mutation markPullRequestReadyForReview"},
		{"missing variable", auth, `{"query":"mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { clientMutationId } }"}`, http.StatusOK, "Variable $id of type ID! was provided invalid value"},
		{"unknown node", auth, mutation("PR_nope"), http.StatusOK, "Could not resolve to a node with the global id of 'PR_nope'"},
		{"node out of the token's reach", auth, mutation(f.PRs("acme/private")[0].NodeID), http.StatusOK, "Could not resolve to a node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got answer
			status, _ := do(t, "POST", f.GraphQLURL(), tt.auth, tt.body, &got)
			msg := got.Message
			if len(got.Errors) > 0 {
				msg = got.Errors[0].Message
			}
			if status != tt.wantStatus || !strings.Contains(msg, tt.wantError) || got.Data.Mark != nil {
				t.Errorf("answer = %d %+v, want %d with %q and no data", status, got, tt.wantStatus, tt.wantError)
			}
		})
	}
	if !f.PRs("acme/widget")[0].Draft || !f.PRs("acme/private")[0].Draft {
		t.Fatal("a refused mutation took a pull request out of draft")
	}

	// A literal id works as well as a variable; marking twice is harmless.
	literal := fmt.Sprintf(`{"query":"mutation { markPullRequestReadyForReview(input: {pullRequestId: \"%s\"}) { clientMutationId pullRequest { number isDraft } } }"}`, pr.NodeID)
	for _, body := range []string{mutation(pr.NodeID), literal} {
		var got answer
		if status, _ := do(t, "POST", f.GraphQLURL(), auth, body, &got); status != http.StatusOK || len(got.Errors) != 0 || got.Data.Mark == nil || got.Data.Mark.PullRequest.Number != n || got.Data.Mark.PullRequest.IsDraft {
			t.Errorf("mark ready = %d %+v, want #%d not a draft", status, got, n)
		}
	}
	if f.PRs("acme/widget")[0].Draft {
		t.Error("the pull request is still a draft")
	}
	if got := f.PRs("acme/private")[0]; got.Number != hidden || !got.Draft {
		t.Errorf("the other installation's pull request = %+v, want still a draft", got)
	}
	if n := f.CountCalls("POST", ghfake.GraphQLPath); n != len(tests)+2 {
		t.Errorf("GraphQL calls recorded = %d, want %d", n, len(tests)+2)
	}
}
