package ghapp

import (
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// stateTTL is how long a /setup flow may take from the review page to
// GitHub's redirect back (GitHub's manifest codes last an hour; creating the
// App takes a click or two).
const stateTTL = 30 * time.Minute

// maxStates bounds the flows started and not finished; the oldest is
// forgotten beyond it.
const maxStates = 64

// stateCookie carries a flow's state to the callback, and only there.
const (
	stateCookie     = "agentfix_setup_state"
	stateCookiePath = "/setup/callback"
)

// states are the random values of the flows started on this process, each
// valid once, until it expires. The same value travels to GitHub and back in
// the state parameter and sits in the browser's cookie, so a callback is
// accepted only from the browser that started the flow (against CSRF) and
// only once.
type states struct {
	rand io.Reader
	now  func() time.Time

	mu      sync.Mutex
	expires map[string]time.Time
}

func newStates(rand io.Reader, now func() time.Time) *states {
	return &states{rand: rand, now: now, expires: map[string]time.Time{}}
}

// mint returns a new state.
func (s *states) mint() (string, error) {
	buf := make([]byte, 32)
	if _, err := io.ReadFull(s.rand, buf); err != nil {
		return "", fmt.Errorf("random state: %w", err)
	}
	state := hex.EncodeToString(buf)
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for v, exp := range s.expires {
		if !now.Before(exp) {
			delete(s.expires, v)
		}
	}
	for len(s.expires) >= maxStates {
		oldest := ""
		for v, exp := range s.expires {
			if oldest == "" || exp.Before(s.expires[oldest]) {
				oldest = v
			}
		}
		delete(s.expires, oldest)
	}
	s.expires[state] = now.Add(stateTTL)
	return state, nil
}

// take checks the state of a callback against the cookie's and uses it up.
// It reports why it refuses: a missing cookie, a mismatch, or a state this
// process did not issue, used already, or expired.
func (s *states) take(param, cookie string) error {
	if cookie == "" {
		return fmt.Errorf("this browser has no setup cookie: the flow was started in another browser or at another address, or more than %s ago", stateTTL)
	}
	if subtle.ConstantTimeCompare([]byte(param), []byte(cookie)) != 1 {
		return fmt.Errorf("the state parameter does not match this browser's setup cookie")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.expires[param]
	delete(s.expires, param)
	switch {
	case !ok:
		return fmt.Errorf("the state is unknown or used already (each setup link works once)")
	case !s.now().Before(exp):
		return fmt.Errorf("the state expired (a setup must finish within %s)", stateTTL)
	}
	return nil
}

// setCookie sends state to the browser for the callback.
func setStateCookie(w http.ResponseWriter, state string, secure bool) {
	http.SetCookie(w, &http.Cookie{
		Name:     stateCookie,
		Value:    state,
		Path:     stateCookiePath,
		MaxAge:   int(stateTTL / time.Second),
		HttpOnly: true,
		Secure:   secure,
		SameSite: http.SameSiteLaxMode,
	})
}

// clearStateCookie removes the state cookie from the browser.
func clearStateCookie(w http.ResponseWriter, secure bool) {
	http.SetCookie(w, &http.Cookie{
		Name:     stateCookie,
		Path:     stateCookiePath,
		MaxAge:   -1,
		HttpOnly: true,
		Secure:   secure,
		SameSite: http.SameSiteLaxMode,
	})
}
