package admin

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentfix/agentfix/internal/logattr"
)

const (
	// sessionCookie is the name of the cookie the login form sets.
	sessionCookie = "agentfix_admin"
	// sessionTTL is how long a login lasts.
	sessionTTL = 12 * time.Hour
	// sessionContext separates the session MAC from any other use of the
	// token as a key.
	sessionContext = "agentfix admin session v1"
	// maxLoginBytes bounds the login form's body.
	maxLoginBytes = 4 << 10
)

// requireToken lets a request through with the bearer token or a valid
// session cookie, and answers anything else with 401 and the login form.
func (s *Server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.authorized(r) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentfix admin"`)
		s.render(w, r, http.StatusUnauthorized, "login", loginView{Next: safeNext(r.URL.RequestURI())})
	})
}

func (s *Server) authorized(r *http.Request) bool {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		return ok && strings.EqualFold(scheme, "Bearer") && s.tokenMatches(strings.TrimSpace(tok))
	}
	c, err := r.Cookie(sessionCookie)
	return err == nil && s.sessionValid(c.Value)
}

// tokenMatches compares in constant time; hashing first makes the time
// independent of the lengths too.
func (s *Server) tokenMatches(tok string) bool {
	a, b := sha256.Sum256([]byte(tok)), sha256.Sum256([]byte(s.token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// session returns the cookie value of a login that ends at exp:
// "<exp unix>.<base64url HMAC(token, context, exp)>".
func (s *Server) session(exp time.Time) string {
	e := strconv.FormatInt(exp.Unix(), 10)
	return e + "." + base64.RawURLEncoding.EncodeToString(s.sessionMAC(e))
}

func (s *Server) sessionMAC(exp string) []byte {
	mac := hmac.New(sha256.New, []byte(s.token))
	mac.Write([]byte(sessionContext + "\n" + exp))
	return mac.Sum(nil)
}

func (s *Server) sessionValid(v string) bool {
	e, sig, ok := strings.Cut(v, ".")
	if !ok {
		return false
	}
	exp, err := strconv.ParseInt(e, 10, 64)
	if err != nil {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.sessionMAC(e)) {
		return false
	}
	return s.now().Before(time.Unix(exp, 0))
}

// loginView is the login form's data.
type loginView struct {
	// Next is where a successful login goes.
	Next string
	// Failed is set after a wrong token.
	Failed bool
}

func (s *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "login", loginView{Next: safeNext(r.URL.Query().Get("next"))})
}

// login checks the posted token and, when it matches, sets the session
// cookie and redirects to the page the form came from.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBytes)
	if err := r.ParseForm(); err != nil {
		s.message(w, r, http.StatusBadRequest, "Bad request", "The login form could not be read: "+err.Error())
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	if !s.tokenMatches(r.PostForm.Get("token")) {
		s.log.Warn("admin login failed", logattr.Path, r.URL.Path, logattr.Outcome, "wrong_token")
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentfix admin"`)
		s.render(w, r, http.StatusUnauthorized, "login", loginView{Next: next, Failed: true})
		return
	}
	exp := s.now().Add(sessionTTL)
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: s.session(exp), Path: "/admin",
		Expires: exp, MaxAge: int(sessionTTL / time.Second),
		HttpOnly: true, Secure: r.TLS != nil || s.secureURL, SameSite: http.SameSiteStrictMode,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout clears the session cookie. (The cookie stays valid until it
// expires if it was copied; changing the token ends every session.)
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: "", Path: "/admin", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil || s.secureURL, SameSite: http.SameSiteStrictMode,
	})
	http.Redirect(w, r, "/admin/login", http.StatusSeeOther)
}

// safeNext keeps a redirect target inside /admin, so the login form cannot
// send anyone elsewhere.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/admin/") || strings.HasPrefix(next, "/admin/login") ||
		strings.ContainsAny(next, "\\\r\n") || strings.Contains(next, "/..") || strings.Contains(next, "//") {
		return "/admin/runs"
	}
	return next
}
