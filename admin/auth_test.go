package admin

import (
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/runs"
)

func bearer(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

func cookieHeader(v string) http.Header {
	return http.Header{"Cookie": {sessionCookie + "=" + v}}
}

func TestAdminNotMountedWithoutToken(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t, "")
	for _, path := range []string{"/admin", "/admin/runs", "/admin/runs/" + testRunID, "/admin/queues", "/admin/queues/api/queues", "/admin/login"} {
		t.Run(path, func(t *testing.T) {
			code, _, _ := fetch(t, "GET", ts.URL+path, bearer(testToken), nil)
			if code != http.StatusNotFound {
				t.Errorf("GET %s = %d, want 404 (no admin token configured)", path, code)
			}
		})
	}
	t.Run("signed link still works", func(t *testing.T) {
		code, _, body := fetch(t, "GET", ts.URL+signedPath(t, runs.LinkKey(testSecret), t0.Add(48*time.Hour)), nil, nil)
		if code != http.StatusOK || !strings.Contains(body, "Greeting is misspelled") {
			t.Errorf("signed run page = %d, want 200 with the task title", code)
		}
	})
}

// extended moves a session cookie's expiry a day later, keeping its MAC.
func extended(v string) string {
	e, sig, _ := strings.Cut(v, ".")
	n, _ := strconv.ParseInt(e, 10, 64)
	return strconv.FormatInt(n+86400, 10) + "." + sig
}

func TestAdminAuth(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t, testToken)
	s := &Server{token: testToken, now: f.clock}
	tests := []struct {
		name   string
		header http.Header
		want   int
	}{
		{"no credentials", nil, http.StatusUnauthorized},
		{"wrong token", bearer("admin-token-0123456780"), http.StatusUnauthorized},
		{"token prefix", bearer(testToken[:10]), http.StatusUnauthorized},
		{"empty bearer", http.Header{"Authorization": {"Bearer "}}, http.StatusUnauthorized},
		{"basic scheme", http.Header{"Authorization": {"Basic " + testToken}}, http.StatusUnauthorized},
		{"bearer token", bearer(testToken), http.StatusOK},
		{"lower-case scheme", http.Header{"Authorization": {"bearer " + testToken}}, http.StatusOK},
		{"session cookie", cookieHeader(s.session(f.clock().Add(time.Hour))), http.StatusOK},
		{"expired session cookie", cookieHeader(s.session(f.clock().Add(-time.Second))), http.StatusUnauthorized},
		{"cookie of another token", cookieHeader((&Server{token: "another-token-0123456", now: f.clock}).session(f.clock().Add(time.Hour))), http.StatusUnauthorized},
		{"cookie holding the token", cookieHeader(testToken), http.StatusUnauthorized},
		{"cookie with a later expiry", cookieHeader(extended(s.session(f.clock().Add(time.Hour)))), http.StatusUnauthorized},
	}
	for _, tt := range tests {
		for _, path := range []string{"/admin/runs", "/admin/runs/" + testRunID, "/admin/queues", "/admin/nope"} {
			t.Run(tt.name+" "+path, func(t *testing.T) {
				code, h, body := fetch(t, "GET", ts.URL+path, tt.header, nil)
				want := tt.want
				if path == "/admin/nope" && want == http.StatusOK {
					want = http.StatusNotFound
				}
				if code != want {
					t.Fatalf("GET %s = %d, want %d", path, code, want)
				}
				if code == http.StatusUnauthorized {
					if got := h.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
						t.Errorf("WWW-Authenticate = %q, want Bearer", got)
					}
					if !strings.Contains(body, `action="/admin/login"`) || strings.Contains(body, "octo/hello") {
						t.Errorf("401 body is not the bare login form:\n%s", body)
					}
				}
			})
		}
	}
}

func TestLogin(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t, testToken)
	form := func(tok, next string) io.Reader {
		return strings.NewReader(url.Values{"token": {tok}, "next": {next}}.Encode())
	}
	formHeader := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}

	t.Run("form is public", func(t *testing.T) {
		code, _, body := fetch(t, "GET", ts.URL+"/admin/login?next=/admin/queues", nil, nil)
		if code != http.StatusOK || !strings.Contains(body, `name="next" value="/admin/queues"`) {
			t.Errorf("GET /admin/login = %d, want 200 with next=/admin/queues:\n%s", code, body)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		code, h, body := fetch(t, "POST", ts.URL+"/admin/login", formHeader, form("guess", "/admin/runs"))
		if code != http.StatusUnauthorized || !strings.Contains(body, "That token is not right.") {
			t.Errorf("POST wrong token = %d, want 401 saying so:\n%s", code, body)
		}
		if c := h.Get("Set-Cookie"); c != "" {
			t.Errorf("a failed login set a cookie: %s", c)
		}
	})
	tests := []struct {
		name, next, wantLocation string
	}{
		{"to the page it came from", "/admin/runs/" + testRunID, "/admin/runs/" + testRunID},
		{"never off the site", "https://evil.example/", "/admin/runs"},
		{"never protocol-relative", "//evil.example/admin/", "/admin/runs"},
		{"never outside admin", "/webhook", "/admin/runs"},
		{"never up and out", "/admin/../webhook", "/admin/runs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, h, _ := fetch(t, "POST", ts.URL+"/admin/login", formHeader, form(testToken, tt.next))
			if code != http.StatusSeeOther || h.Get("Location") != tt.wantLocation {
				t.Fatalf("POST /admin/login = %d to %q, want 303 to %q", code, h.Get("Location"), tt.wantLocation)
			}
			resp := &http.Response{Header: h}
			cookies := resp.Cookies()
			if len(cookies) != 1 {
				t.Fatalf("cookies = %v, want one", cookies)
			}
			c := cookies[0]
			if c.Name != sessionCookie || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/admin" || c.Secure {
				t.Errorf("cookie = %+v, want %s, HttpOnly, SameSite=Strict, Path=/admin, not Secure over http", c, sessionCookie)
			}
			if strings.Contains(c.Value, testToken) {
				t.Errorf("cookie %q holds the token", c.Value)
			}
			if code, _, body := fetch(t, "GET", ts.URL+"/admin/runs", cookieHeader(c.Value), nil); code != http.StatusOK || !strings.Contains(body, "octo/hello") {
				t.Errorf("GET /admin/runs with the cookie = %d, want 200 with the run", code)
			}
		})
	}
	t.Run("logout clears the cookie", func(t *testing.T) {
		code, h, _ := fetch(t, "POST", ts.URL+"/admin/logout", nil, nil)
		c := (&http.Response{Header: h}).Cookies()
		if code != http.StatusSeeOther || len(c) != 1 || c[0].MaxAge >= 0 || c[0].Value != "" {
			t.Errorf("POST /admin/logout = %d, cookies %v; want 303 and a deleted cookie", code, c)
		}
	})
}

func TestSecureCookieWithHTTPSPublicURL(t *testing.T) {
	f := newFixture(t)
	s, err := New(Options{Token: testToken, Runs: f.store, Redis: f.rdb, Queues: []string{jobs.QueueAgent}, PublicURL: "https://bot.example.com",
		Logger: slog.New(slog.DiscardHandler), Now: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	w := &recorder{header: http.Header{}}
	r, _ := http.NewRequest("POST", "/admin/login", strings.NewReader("token="+testToken))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	s.login(w, r)
	c := (&http.Response{Header: w.header}).Cookies()
	if w.code != http.StatusSeeOther || len(c) != 1 || !c[0].Secure {
		t.Errorf("login behind an https public URL = %d, cookies %v; want a Secure cookie", w.code, c)
	}
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	code   int
	body   strings.Builder
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(code int) { r.code = code }

func TestSignedLinkHTTP(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t, testToken)
	key := runs.LinkKey(testSecret)
	good := signedPath(t, key, f.clock().Add(time.Hour))
	u, _ := url.Parse(good)
	q := u.Query()
	q.Set("sig", strings.Repeat("A", len(q.Get("sig"))))
	tampered := u.Path + "?" + q.Encode()
	otherRun, err := runs.SignLink(key, "http://x.invalid", "20250102T150405Z-00000000", f.clock().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		want       int
		wantText   string
	}{
		{"good", good, http.StatusOK, "Greeting is misspelled"},
		{"tampered", tampered, http.StatusForbidden, "Invalid link"},
		{"other key", signedPath(t, runs.LinkKey("other secret"), f.clock().Add(time.Hour)), http.StatusForbidden, "Invalid link"},
		{"expired", signedPath(t, key, f.clock().Add(-time.Minute)), http.StatusForbidden, "Link expired"},
		{"no signature", "/runs/" + testRunID, http.StatusForbidden, "Invalid link"},
		{"signed but gone", strings.TrimPrefix(otherRun, "http://x.invalid"), http.StatusNotFound, "Run records are kept for 14 days"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, h, body := fetch(t, "GET", ts.URL+tt.path, nil, nil)
			if code != tt.want || !strings.Contains(body, tt.wantText) {
				t.Errorf("GET %s = %d, want %d with %q:\n%s", tt.path, code, tt.want, tt.wantText, body)
			}
			if got := h.Get("Referrer-Policy"); got != "no-referrer" {
				t.Errorf("Referrer-Policy = %q, want no-referrer (the link must not leak)", got)
			}
			if strings.Contains(body, "/admin/logout") {
				t.Error("a signed page shows the admin navigation")
			}
		})
	}
}

func TestRunNotFound(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t, testToken)
	for _, id := range []string{"20250102T150405Z-00000000", "not-a-run-id"} {
		t.Run(id, func(t *testing.T) {
			code, _, body := fetch(t, "GET", ts.URL+"/admin/runs/"+id, bearer(testToken), nil)
			if code != http.StatusNotFound || !strings.Contains(body, "Run records are kept for 14 days (AGENTFIX_RUN_RETENTION) and then expire") {
				t.Errorf("GET missing run = %d, want 404 naming the retention:\n%s", code, body)
			}
		})
	}
}

func TestRunListLimit(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t, testToken)
	tests := []struct {
		query string
		want  int
	}{
		{"", http.StatusOK},
		{"?limit=1", http.StatusOK},
		{"?limit=1000", http.StatusOK},
		{"?limit=0", http.StatusBadRequest},
		{"?limit=1001", http.StatusBadRequest},
		{"?limit=ten", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			code, _, body := fetch(t, "GET", ts.URL+"/admin/runs"+tt.query, bearer(testToken), nil)
			if code != tt.want {
				t.Errorf("GET /admin/runs%s = %d, want %d:\n%s", tt.query, code, tt.want, body)
			}
		})
	}
}

func TestNewOptions(t *testing.T) {
	f := newFixture(t)
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		name string
		o    Options
		ok   bool
	}{
		{"minimal", Options{Runs: f.store, Logger: log}, true},
		{"no runs", Options{Logger: log}, false},
		{"no logger", Options{Runs: f.store}, false},
		{"token without redis", Options{Token: testToken, Runs: f.store, Logger: log}, false},
		{"bad web URL", Options{Runs: f.store, Logger: log, GitHubWebURL: "github.com"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.o); (err == nil) != tt.ok {
				t.Errorf("New error = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
