package ghfake

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// BasePath is where the fake serves the REST API, as GitHub Enterprise
// Server does.
const BasePath = "/api/v3"

// Default identity of the fake App.
const (
	DefaultAppID   = 4242
	DefaultAppSlug = "agentfix-test"
)

// Fake is a fake GitHub. Its methods are safe for concurrent use, but those
// that take no context call t.Fatal on misuse and belong on the test's
// goroutine.
type Fake struct {
	t      testing.TB
	srv    *httptest.Server
	appID  int64
	slug   string
	key    *rsa.PrivateKey
	keyPEM []byte
	gitBin string
	root   string // bare repositories: root/owner/name.git
	home   string // HOME of the git commands

	mu            sync.Mutex
	closed        bool
	tokenTTL      time.Duration
	installations map[int64]*installation
	tokens        map[string]*token
	issued        []string
	repos         map[string]*repo // by lower-case "owner/name"
	users         map[string]int64 // user ids by lower-case login
	nextID        int64
	calls         []Call
	faults        []*Fault
	deliveries    []*Delivery
	redeliveries  []int64
	manifests     map[string]*manifestCode
	teams         map[string]map[string]string // lower-case "org/slug" → lower-case login → state
	logBlobs      map[string]string            // job logs served at /blobs/logs/{token}
	blobCreds     int                          // log downloads that carried credentials
}

// New starts a fake GitHub for the duration of the test.
func New(t testing.TB) *Fake {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("ghfake needs git on PATH: %v", err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("generate app key: %v", err)
	}
	dir := t.TempDir()
	f := &Fake{
		t:      t,
		appID:  DefaultAppID,
		slug:   DefaultAppSlug,
		key:    key,
		keyPEM: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		gitBin: gitBin,
		root:   filepath.Join(dir, "repos"),
		home:   filepath.Join(dir, "home"),

		tokenTTL:      time.Hour,
		installations: map[int64]*installation{},
		tokens:        map[string]*token{},
		repos:         map[string]*repo{},
		users:         map[string]int64{},
		nextID:        1000,
		manifests:     map[string]*manifestCode{},
		teams:         map[string]map[string]string{},
		logBlobs:      map[string]string{},
	}
	for _, d := range []string{f.root, f.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("ghfake: %v", err)
		}
	}
	f.srv = httptest.NewServer(f.handler())
	t.Cleanup(func() {
		f.mu.Lock()
		f.closed = true
		f.mu.Unlock()
		f.srv.Close()
	})
	return f
}

// URL returns the server's root URL, without a trailing slash; web links
// (html_url) live under it.
func (f *Fake) URL() string { return f.srv.URL }

// APIURL returns the REST base URL, with its trailing slash, for the bot's
// API URL setting.
func (f *Fake) APIURL() string { return f.srv.URL + BasePath + "/" }

// GraphQLURL returns the GraphQL endpoint, where GitHub Enterprise Server
// has it next to the REST base URL.
func (f *Fake) GraphQLURL() string { return f.srv.URL + GraphQLPath }

// AppID returns the fake App's id.
func (f *Fake) AppID() int64 { return f.appID }

// AppSlug returns the fake App's slug.
func (f *Fake) AppSlug() string { return f.slug }

// BotLogin returns the login the App's installations act as.
func (f *Fake) BotLogin() string { return f.slug + "[bot]" }

// PrivateKeyPEM returns the App's private key (PKCS#1 PEM), for the bot
// under test.
func (f *Fake) PrivateKeyPEM() []byte { return append([]byte(nil), f.keyPEM...) }

// handler routes the API (under BasePath, and GraphQL at GraphQLPath), the
// git server (under /git/), and wraps them with call recording and fault
// injection.
func (f *Fake) handler() http.Handler {
	api := http.NewServeMux()
	f.routeApp(api)
	f.routeIssues(api)
	f.routePulls(api)
	f.routeRepos(api)
	f.routeOrgs(api)
	f.routeChecks(api)
	api.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Not Found")
	})
	root := http.NewServeMux()
	root.Handle(BasePath+"/", http.StripPrefix(BasePath, api))
	f.routeGraphQL(root)
	root.HandleFunc("GET "+blobPath+"{token}", f.serveLogBlob)
	root.Handle("/git/", f.gitHandler())
	root.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Not Found")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := Call{Method: r.Method, Path: callPath(r.URL.Path), Query: r.URL.RawQuery, Auth: authKind(r)}
		if strings.HasPrefix(r.URL.Path, "/git/") {
			// git's answers are streamed: the call is recorded once served.
			rec := &statusRecorder{ResponseWriter: w}
			f.serve(root, rec, r, call)
			call.Status = rec.status()
			f.record(call)
			return
		}
		// An API answer is held until its call is recorded, so a client
		// that has its answer finds the call in Calls.
		rec := httptest.NewRecorder()
		f.serve(root, rec, r, call)
		call.Status = rec.Code
		f.record(call)
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

// serve answers r with the next fault that matches call, or with h.
func (f *Fake) serve(h http.Handler, w http.ResponseWriter, r *http.Request, call Call) {
	ft := f.takeFault(r.Method, call.Path)
	if ft == nil {
		h.ServeHTTP(w, r)
		return
	}
	if ft.AfterEffect {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	ft.write(w, f.appID)
}

// record appends call to the calls the fake answered.
func (f *Fake) record(call Call) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
}

// callPath is the path a Call and a Fault see: relative to BasePath for the
// API, as is for the git server.
func callPath(p string) string {
	if rest, ok := strings.CutPrefix(p, BasePath+"/"); ok {
		return "/" + rest
	}
	return p
}

// authKind names the credential a request carries, never its value.
func authKind(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, cred, _ := strings.Cut(h, " ")
	switch {
	case h == "":
		return "none"
	case strings.EqualFold(scheme, "basic"):
		return "basic"
	case strings.Count(cred, ".") == 2:
		return "jwt"
	default:
		return "token"
	}
}

// statusRecorder remembers the status written.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Flush lets git's streamed answers through.
func (s *statusRecorder) Flush() {
	if fl, ok := s.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

func (s *statusRecorder) status() int {
	if s.code == 0 {
		return http.StatusOK
	}
	return s.code
}

// writeJSON answers v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers GitHub's error shape.
func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]any{"message": message, "documentation_url": "https://docs.github.com/rest"})
}

// writeValidation answers 422 Validation Failed with one error, as GitHub
// does for a refused creation.
func writeValidation(w http.ResponseWriter, resource, field, code, message string) {
	e := map[string]any{"resource": resource, "code": code}
	if field != "" {
		e["field"] = field
	}
	if message != "" {
		e["message"] = message
	}
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"message":           "Validation Failed",
		"errors":            []any{e},
		"documentation_url": "https://docs.github.com/rest",
	})
}

// decodeBody reads a JSON request body into v; a malformed one answers 400
// like GitHub ("Problems parsing JSON") and returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.Body == nil || r.ContentLength == 0 {
		return true
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 10<<20)).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Problems parsing JSON: %v", err))
		return false
	}
	return true
}

// newID returns a fresh id for comments, reactions, reviews, check runs,
// deliveries and users. Callers hold f.mu.
func (f *Fake) newID() int64 {
	f.nextID++
	return f.nextID
}

// fatalf fails the test, unless it already ended.
func (f *Fake) fatalf(format string, args ...any) {
	f.t.Helper()
	f.t.Fatalf("ghfake: "+format, args...)
}

// logf logs to the test while it runs.
func (f *Fake) logf(format string, args ...any) {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if !closed {
		f.t.Logf("ghfake: "+format, args...)
	}
}
