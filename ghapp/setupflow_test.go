package ghapp

import (
	"encoding/json"
	"html"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/joho/godotenv"

	"github.com/agentfix/agentfix/ghapp/ghfake"
)

const conversions = "/app-manifests/*/conversions"

// setupEnv is a Setup served over loopback HTTP against a fake GitHub.
type setupEnv struct {
	f      *ghfake.Fake
	setup  *Setup
	srv    *httptest.Server
	dir    string
	client *http.Client // with a cookie jar; follows no redirects
	clock  *clock
}

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newSetupEnv(t *testing.T, edit ...func(*SetupOptions)) *setupEnv {
	t.Helper()
	f := ghfake.New(t)
	e := &setupEnv{f: f, dir: t.TempDir(), clock: &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}}
	opts := SetupOptions{
		WebURL:       "https://github.example/",
		APIURL:       f.APIURL(),
		Dir:          e.dir,
		TriggerLabel: "agent-fix",
		Command:      "/agent-fix",
		Rand:         rand.NewChaCha8([32]byte{1}),
		Now:          e.clock.now,
	}
	for _, ed := range edit {
		ed(&opts)
	}
	s, err := NewSetup(opts)
	if err != nil {
		t.Fatalf("NewSetup: %v", err)
	}
	e.setup = s
	e.srv = httptest.NewServer(s)
	t.Cleanup(e.srv.Close)
	jar, _ := cookiejar.New(nil)
	e.client = &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return e
}

// page is one answer of the setup pages.
type page struct {
	code   int
	body   string
	header http.Header
}

func (e *setupEnv) do(t *testing.T, req *http.Request) page {
	t.Helper()
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{code: resp.StatusCode, body: string(b), header: resp.Header}
}

func (e *setupEnv) get(t *testing.T, path string) page {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	return e.do(t, req)
}

func (e *setupEnv) post(t *testing.T, form url.Values) page {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/setup", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return e.do(t, req)
}

var (
	actionAttr   = regexp.MustCompile(`<form method="post" action="([^"]*)">`)
	manifestAttr = regexp.MustCompile(`<input type="hidden" name="manifest" value="([^"]*)">`)
)

// review posts the choices and returns the state and manifest the review
// page sends to GitHub.
func (e *setupEnv) review(t *testing.T, form url.Values) (action *url.URL, state string, manifest appManifest) {
	t.Helper()
	p := e.post(t, form)
	if p.code != http.StatusOK {
		t.Fatalf("POST /setup = %d, want 200:\n%s", p.code, p.body)
	}
	am, mm := actionAttr.FindStringSubmatch(p.body), manifestAttr.FindStringSubmatch(p.body)
	if am == nil || mm == nil {
		t.Fatalf("review page has no form posting a manifest:\n%s", p.body)
	}
	action, err := url.Parse(html.UnescapeString(am[1]))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(mm[1])), &manifest); err != nil {
		t.Fatalf("manifest field: %v", err)
	}
	return action, action.Query().Get("state"), manifest
}

func (e *setupEnv) callback(t *testing.T, code, state string) page {
	t.Helper()
	q := url.Values{}
	if code != "" {
		q.Set("code", code)
	}
	if state != "" {
		q.Set("state", state)
	}
	return e.get(t, "/setup/callback?"+q.Encode())
}

// files returns the names and modes of the files in the working directory.
func (e *setupEnv) files(t *testing.T) map[string]os.FileMode {
	t.Helper()
	entries, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]os.FileMode{}
	for _, en := range entries {
		info, err := en.Info()
		if err != nil {
			t.Fatal(err)
		}
		out[en.Name()] = info.Mode().Perm()
	}
	return out
}

func personal(name string) url.Values { return url.Values{"name": {name}, "owner": {"personal"}} }

// TestSetupFlow creates an App through the whole flow: the form, the
// review, GitHub's redirect, the code exchanged once, the files written,
// and a replayed callback refused.
func TestSetupFlow(t *testing.T) {
	e := newSetupEnv(t)
	existing := "# operator's settings\nexport AGENTFIX_MODEL=openai/gpt-5\nAGENTFIX_APP_ID=\nOPENAI_API_KEY=\"sk-test\" # quoted\n\nAGENTFIX_LOG_FORMAT=text"
	if err := os.WriteFile(filepath.Join(e.dir, ".env"), []byte(existing), 0o644); err != nil {
		t.Fatal(err)
	}
	if p := e.get(t, "/setup"); p.code != http.StatusOK || !strings.Contains(p.body, `<form method="post" action="/setup">`) {
		t.Fatalf("GET /setup = %d, want 200 with the form:\n%s", p.code, p.body)
	}
	action, state, manifest := e.review(t, url.Values{"name": {"my-fixer"}, "owner": {"personal"}, "members": {"on"}, "actions": {"on"}})
	if got, want := action.Scheme+"://"+action.Host+action.Path, "https://github.example/settings/apps/new"; got != want {
		t.Errorf("form action = %s, want %s", got, want)
	}
	if len(state) != 64 {
		t.Errorf("state = %q, want 64 hex digits", state)
	}
	if got, want := manifest.HookAttributes.URL, e.srv.URL+"/webhook"; got != want {
		t.Errorf("webhook url = %s, want %s (the request's address)", got, want)
	}
	if manifest.Name != "my-fixer" || manifest.DefaultPermissions["members"] != "read" || manifest.DefaultPermissions["workflows"] != "" {
		t.Errorf("manifest name %q, members %q, workflows %q; want my-fixer, read, none", manifest.Name, manifest.DefaultPermissions["members"], manifest.DefaultPermissions["workflows"])
	}
	if got := manifest.DefaultPermissions["actions"]; got != "write" {
		t.Errorf("manifest actions %q, want write (the box was ticked)", got)
	}

	conv := e.f.AddManifestCode("code-1")
	p := e.callback(t, "code-1", state)
	if p.code != http.StatusOK || !strings.Contains(p.body, "The GitHub App is created") {
		t.Fatalf("callback = %d, want 200 and the done page:\n%s", p.code, p.body)
	}
	if n := e.f.CountCalls("POST", conversions); n != 1 {
		t.Errorf("conversions = %d, want 1", n)
	}
	keyName := ghfake.DefaultAppSlug + ".private-key.pem"
	if diff := cmp.Diff(map[string]os.FileMode{".env": 0o600, keyName: 0o600}, e.files(t)); diff != "" {
		t.Errorf("files in the working directory (-want +got):\n%s", diff)
	}
	key, err := os.ReadFile(filepath.Join(e.dir, keyName))
	if err != nil || string(key) != conv.PEM {
		t.Errorf("key file = %q, %v; want the App's key", key, err)
	}
	env, err := godotenv.Read(filepath.Join(e.dir, ".env"))
	if err != nil {
		t.Fatal(err)
	}
	wantEnv := map[string]string{
		"AGENTFIX_MODEL": "openai/gpt-5", "OPENAI_API_KEY": "sk-test", "AGENTFIX_LOG_FORMAT": "text",
		"AGENTFIX_APP_ID": "4242", "AGENTFIX_PRIVATE_KEY_FILE": keyName, "AGENTFIX_WEBHOOK_SECRET": conv.WebhookSecret,
	}
	if diff := cmp.Diff(wantEnv, env); diff != "" {
		t.Errorf(".env (-want +got):\n%s", diff)
	}
	written, _ := os.ReadFile(filepath.Join(e.dir, ".env"))
	for _, line := range []string{"# operator's settings", "export AGENTFIX_MODEL=openai/gpt-5", `OPENAI_API_KEY="sk-test" # quoted`, "AGENTFIX_LOG_FORMAT=text"} {
		if !strings.Contains(string(written), line+"\n") {
			t.Errorf(".env lost the line %q:\n%s", line, written)
		}
	}
	if strings.Contains(string(written), "AGENTFIX_APP_ID=\n") {
		t.Errorf(".env keeps the old empty AGENTFIX_APP_ID line:\n%s", written)
	}

	// The same callback again, cookie and all, is refused before any
	// exchange, and nothing changes.
	u, _ := url.Parse(e.srv.URL + "/setup/callback")
	e.client.Jar.SetCookies(u, []*http.Cookie{{Name: stateCookie, Value: state, Path: stateCookiePath}})
	if p := e.callback(t, "code-1", state); p.code != http.StatusForbidden {
		t.Errorf("replayed callback = %d, want 403:\n%s", p.code, p.body)
	}
	if n := e.f.CountCalls("POST", conversions); n != 1 {
		t.Errorf("conversions after the replay = %d, want 1", n)
	}
	if again, _ := os.ReadFile(filepath.Join(e.dir, ".env")); string(again) != string(written) {
		t.Errorf(".env changed after the replay")
	}
	if p := e.get(t, "/setup"); p.code != http.StatusOK || !strings.Contains(p.body, "Setup is finished") {
		t.Errorf("GET /setup after setup = %d, want 200 saying setup is finished:\n%s", p.code, p.body)
	}
	if p := e.post(t, personal("second")); p.code != http.StatusConflict {
		t.Errorf("POST /setup after setup = %d, want 409", p.code)
	}
}

// TestSetupCookie checks the state cookie the review page sets.
func TestSetupCookie(t *testing.T) {
	e := newSetupEnv(t)
	p := e.post(t, personal("a"))
	cookies := (&http.Response{Header: p.header}).Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies = %v, want one", cookies)
	}
	c := cookies[0]
	got := []any{c.Name, c.Path, c.MaxAge, c.HttpOnly, c.SameSite, c.Secure, len(c.Value)}
	want := []any{stateCookie, "/setup/callback", 1800, true, http.SameSiteLaxMode, false, 64}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cookie name, path, max-age, httponly, samesite, secure, value length (-want +got):\n%s", diff)
	}
}

// TestSetupCallbackRefused checks that a callback without the right state
// is refused and writes nothing, while GitHub would convert its code.
func TestSetupCallbackRefused(t *testing.T) {
	tests := []struct {
		name   string
		code   string
		state  func(issued string) string
		cookie func(issued string) string // "" sends no cookie
		before func(e *setupEnv)
		want   int
		reason string
	}{
		{name: "no state", code: "c", state: func(string) string { return "" }, cookie: same, want: 400, reason: "must carry a code and a state"},
		{name: "no code", code: "", state: same, cookie: same, want: 400, reason: "must carry a code and a state"},
		{name: "wrong state", code: "c", state: func(string) string { return strings.Repeat("0", 64) }, cookie: same, want: 403, reason: "does not match"},
		{name: "no cookie", code: "c", state: same, cookie: func(string) string { return "" }, want: 403, reason: "has no setup cookie"},
		{name: "state and cookie of another flow", code: "c", state: func(string) string { return strings.Repeat("a", 64) }, cookie: func(string) string { return strings.Repeat("a", 64) }, want: 403, reason: "unknown or used already"},
		{name: "expired", code: "c", state: same, cookie: same, before: func(e *setupEnv) { e.clock.advance(stateTTL) }, want: 403, reason: "expired"},
		{name: "malformed code", code: "../../app", state: same, cookie: same, want: 400, reason: "code parameter is malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSetupEnv(t)
			e.f.AddManifestCode("c")
			_, issued, _ := e.review(t, personal("a"))
			u, _ := url.Parse(e.srv.URL + "/setup/callback")
			jar, _ := cookiejar.New(nil)
			e.client.Jar = jar
			if c := tt.cookie(issued); c != "" {
				jar.SetCookies(u, []*http.Cookie{{Name: stateCookie, Value: c, Path: stateCookiePath}})
			}
			if tt.before != nil {
				tt.before(e)
			}
			p := e.callback(t, tt.code, tt.state(issued))
			if p.code != tt.want || !strings.Contains(p.body, tt.reason) {
				t.Errorf("callback = %d, want %d with %q:\n%s", p.code, tt.want, tt.reason, p.body)
			}
			if n := e.f.CountCalls("POST", conversions); n != 0 {
				t.Errorf("conversions = %d, want 0", n)
			}
			if files := e.files(t); len(files) != 0 {
				t.Errorf("files written: %v, want none", files)
			}
		})
	}
}

func same(s string) string { return s }

// TestSetupCodeRefusedByGitHub: a code GitHub does not convert (used or
// expired) leaves nothing written and lets the operator start again.
func TestSetupCodeRefusedByGitHub(t *testing.T) {
	e := newSetupEnv(t)
	_, state, _ := e.review(t, personal("a"))
	p := e.callback(t, "never-issued", state)
	if p.code != http.StatusBadGateway || !strings.Contains(p.body, "404 Not Found") || !strings.Contains(p.body, `<a href="/setup">Start again</a>`) {
		t.Errorf("callback = %d, want 502 naming GitHub's 404 and offering a new start:\n%s", p.code, p.body)
	}
	if files := e.files(t); len(files) != 0 {
		t.Errorf("files written: %v, want none", files)
	}
	e.f.AddManifestCode("good")
	_, state, _ = e.review(t, personal("a"))
	if p := e.callback(t, "good", state); p.code != http.StatusOK {
		t.Errorf("second attempt = %d, want 200:\n%s", p.code, p.body)
	}
}

// TestSetupKeyFileNeverReplaced: an existing key file of the same name is
// kept and the new key gets a numbered name.
func TestSetupKeyFileNeverReplaced(t *testing.T) {
	e := newSetupEnv(t)
	old := filepath.Join(e.dir, ghfake.DefaultAppSlug+".private-key.pem")
	if err := os.WriteFile(old, []byte("old key"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.f.AddManifestCode("c")
	_, state, _ := e.review(t, personal("a"))
	if p := e.callback(t, "c", state); p.code != http.StatusOK {
		t.Fatalf("callback = %d:\n%s", p.code, p.body)
	}
	if b, _ := os.ReadFile(old); string(b) != "old key" {
		t.Errorf("the existing key file was changed")
	}
	env, _ := godotenv.Read(filepath.Join(e.dir, ".env"))
	if got, want := env["AGENTFIX_PRIVATE_KEY_FILE"], ghfake.DefaultAppSlug+"-2.private-key.pem"; got != want {
		t.Errorf("AGENTFIX_PRIVATE_KEY_FILE = %q, want %q", got, want)
	}
}

func TestSetupChoices(t *testing.T) {
	tests := []struct {
		name   string
		form   url.Values
		want   int
		msg    string
		action string
	}{
		{name: "personal", form: personal("a"), want: 200, action: "https://github.example/settings/apps/new"},
		{name: "organization", form: url.Values{"name": {"a"}, "owner": {"org"}, "org": {"acme-corp"}}, want: 200, action: "https://github.example/organizations/acme-corp/settings/apps/new"},
		{name: "no name", form: personal("  "), want: 400, msg: "The App needs a name."},
		{name: "long name", form: personal(strings.Repeat("n", 35)), want: 400, msg: "The name has 35 characters; GitHub allows at most 34."},
		{name: "control character", form: personal("a\x00b"), want: 400, msg: "control characters"},
		{name: "no owner", form: url.Values{"name": {"a"}}, want: 400, msg: "Choose a personal account or an organization."},
		{name: "organization without name", form: url.Values{"name": {"a"}, "owner": {"org"}}, want: 400, msg: "Name the organization."},
		{name: "organization login with a slash", form: url.Values{"name": {"a"}, "owner": {"org"}, "org": {"acme/../x"}}, want: 400, msg: "is not an organization login"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSetupEnv(t)
			if tt.want != 200 {
				p := e.post(t, tt.form)
				if p.code != tt.want || !strings.Contains(p.body, html.EscapeString(tt.msg)) {
					t.Errorf("POST /setup = %d, want %d with %q:\n%s", p.code, tt.want, tt.msg, p.body)
				}
				if len(p.header.Values("Set-Cookie")) != 0 {
					t.Errorf("a refused form set a cookie")
				}
				return
			}
			action, _, _ := e.review(t, tt.form)
			if got := action.Scheme + "://" + action.Host + action.Path; got != tt.action {
				t.Errorf("form action = %s, want %s", got, tt.action)
			}
		})
	}
}

// TestSetupCannotSave: a working directory where the credentials cannot be
// saved is found before the operator is sent to GitHub.
func TestSetupCannotSave(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		want    string
	}{
		{"malformed .env", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("OPENAI_API_KEY=\"unterminated\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, ".env does not parse"},
		{".env is a directory", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, ".env"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, "is a directory"},
		{"directory gone", func(t *testing.T, dir string) {
			if err := os.Remove(dir); err != nil {
				t.Fatal(err)
			}
		}, "does not take new files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSetupEnv(t)
			tt.prepare(t, e.dir)
			p := e.post(t, personal("a"))
			if p.code != http.StatusInternalServerError || !strings.Contains(p.body, tt.want) {
				t.Errorf("POST /setup = %d, want 500 with %q:\n%s", p.code, tt.want, p.body)
			}
			if len(p.header.Values("Set-Cookie")) != 0 || strings.Contains(p.body, "settings/apps/new") {
				t.Errorf("the operator is sent to GitHub although the credentials cannot be saved")
			}
		})
	}
}

// TestSetupCrossOriginPost: another site cannot start a flow in the
// operator's browser.
func TestSetupCrossOriginPost(t *testing.T) {
	e := newSetupEnv(t)
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/setup", strings.NewReader(personal("a").Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", "https://evil.example")
	p := e.do(t, req)
	if p.code != http.StatusForbidden || len(p.header.Values("Set-Cookie")) != 0 {
		t.Errorf("cross-site POST /setup = %d with cookies %v, want 403 and none", p.code, p.header.Values("Set-Cookie"))
	}
}

// TestSetupBaseURL checks where the webhook URL comes from: the configured
// public URL, or the request, whose X-Forwarded-* headers count only from a
// loopback peer.
func TestSetupBaseURL(t *testing.T) {
	tests := []struct {
		name       string
		public     string
		remote     string
		host       string
		header     map[string]string
		want       int
		webhookURL string
	}{
		{name: "request", remote: "192.0.2.7:5000", host: "bot.example.com:8080", want: 200, webhookURL: "http://bot.example.com:8080/webhook"},
		{name: "forwarded from loopback", remote: "127.0.0.1:5000", host: "localhost:8080", header: map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "abc.trycloudflare.com"}, want: 200, webhookURL: "https://abc.trycloudflare.com/webhook"},
		{name: "forwarded from ipv6 loopback", remote: "[::1]:5000", host: "localhost:8080", header: map[string]string{"X-Forwarded-Proto": "https, http"}, want: 200, webhookURL: "https://localhost:8080/webhook"},
		{name: "forwarded from elsewhere", remote: "192.0.2.7:5000", host: "bot.example.com", header: map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example"}, want: 200, webhookURL: "http://bot.example.com/webhook"},
		{name: "public url wins", public: "https://fix.example.org/", remote: "127.0.0.1:5000", host: "localhost:8080", header: map[string]string{"X-Forwarded-Host": "evil.example"}, want: 200, webhookURL: "https://fix.example.org/webhook"},
		{name: "hostile host", remote: "192.0.2.7:5000", host: `a"><script>`, want: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSetupEnv(t, func(o *SetupOptions) { o.PublicURL = tt.public })
			req := httptest.NewRequest(http.MethodGet, "/setup", nil)
			req.RemoteAddr, req.Host = tt.remote, tt.host
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			e.setup.ServeHTTP(rec, req)
			body := rec.Body.String()
			if rec.Code != tt.want {
				t.Fatalf("GET /setup = %d, want %d:\n%s", rec.Code, tt.want, body)
			}
			if strings.Contains(body, "<script>") {
				t.Errorf("the page carries the request's host unescaped:\n%s", body)
			}
			if tt.webhookURL != "" && !strings.Contains(body, "<code>"+tt.webhookURL+"</code>") {
				t.Errorf("the page does not name the webhook URL %s:\n%s", tt.webhookURL, body)
			}
		})
	}
}

// TestSetupEscapes posts hostile values: every page shows them escaped.
func TestSetupEscapes(t *testing.T) {
	e := newSetupEnv(t)
	hostile := `x"><script>alert(1)</script>'&`
	pages := map[string]page{
		"review":        e.post(t, personal(hostile)),
		"refused org":   e.post(t, url.Values{"name": {hostile}, "owner": {"org"}, "org": {hostile}}),
		"refused name":  e.post(t, personal(hostile+hostile)),
		"bad callback":  e.callback(t, hostile, hostile),
		"unknown owner": e.post(t, url.Values{"name": {"a"}, "owner": {hostile}}),
	}
	for name, p := range pages {
		if strings.Contains(p.body, "<script>") || strings.Contains(p.body, `x">`) {
			t.Errorf("%s page (%d) carries the value unescaped:\n%s", name, p.code, p.body)
		}
	}
	if !strings.Contains(pages["review"].body, `x\&#34;&gt;&lt;script&gt;`) {
		t.Errorf("review page does not show the escaped name:\n%s", pages["review"].body)
	}
}

// TestSetupPagesGolden renders each page for a request from a tunnel on
// the same machine and compares it with testdata/setup_*.golden.
func TestSetupPagesGolden(t *testing.T) {
	e := newSetupEnv(t)
	e.f.AddManifestCode("c")
	do := func(method, path string, form url.Values, host string) page {
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequest(method, e.srv.URL+path, body)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		req.Host = host
		req.Header.Set("X-Forwarded-Proto", "https")
		return e.do(t, req)
	}
	const tunnel = "abc.trycloudflare.com"
	review := do("POST", "/setup", url.Values{"name": {"agentfix-acme"}, "owner": {"org"}, "org": {"acme"}, "workflows": {"on"}}, tunnel)
	state := regexp.MustCompile(`state=([0-9a-f]{64})`).FindStringSubmatch(review.body)
	if state == nil {
		t.Fatalf("no state on the review page:\n%s", review.body)
	}
	// The cookie jar holds the cookie under the test server's address;
	// send it along with the tunnel's Host.
	cb := func(code, st string) page {
		req, _ := http.NewRequest("GET", e.srv.URL+"/setup/callback?code="+code+"&state="+st, nil)
		req.Host = tunnel
		req.AddCookie(&http.Cookie{Name: stateCookie, Value: st})
		return e.do(t, req)
	}
	pages := []struct {
		name string
		p    page
		code int
	}{
		{"form", do("GET", "/setup", nil, tunnel), 200},
		{"form_local", do("GET", "/setup", nil, "localhost:8080"), 200},
		{"form_error", do("POST", "/setup", url.Values{"name": {"agentfix-acme"}, "owner": {"org"}, "org": {"-acme"}}, tunnel), 400},
		{"review", review, 200},
		{"refused", cb("c", strings.Repeat("0", 64)), 403},
		{"done", cb("c", state[1]), 200},
		{"finished", do("GET", "/setup", nil, tunnel), 200},
	}
	for _, pg := range pages {
		t.Run(pg.name, func(t *testing.T) {
			if pg.p.code != pg.code {
				t.Errorf("status = %d, want %d", pg.p.code, pg.code)
			}
			// The fake's address changes from run to run.
			golden(t, "setup_"+pg.name+".golden", strings.ReplaceAll(pg.p.body, e.f.URL(), "https://github.example"))
		})
	}
	// And with AGENTFIX_PUBLIC_URL elsewhere than the browser.
	e2 := newSetupEnv(t, func(o *SetupOptions) { o.PublicURL = "https://fix.example.org" })
	req, _ := http.NewRequest("GET", e2.srv.URL+"/setup", nil)
	req.Host = "localhost:8080"
	golden(t, "setup_form_public_url.golden", e2.do(t, req).body)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}
