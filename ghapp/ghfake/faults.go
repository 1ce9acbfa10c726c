package ghfake

import (
	"fmt"
	"net/http"
	"path"
	"strconv"
)

// Call is one request the fake answered.
type Call struct {
	Method string
	// Path is relative to BasePath for the API ("/repos/o/r/issues/1"), and
	// the full path for the git server ("/git/o/r.git/info/refs").
	Path  string
	Query string
	// Status is the HTTP status answered.
	Status int
	// Auth is the kind of credential sent: "jwt", "token", "basic" or
	// "none" (never the credential).
	Auth string
}

// Calls returns every request answered so far, in order.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// CountCalls counts the requests with method (any when "") whose path
// matches pattern (path.Match syntax: "*" is one path segment).
func (f *Fake) CountCalls(method, pattern string) int {
	n := 0
	for _, c := range f.Calls() {
		if (method == "" || c.Method == method) && matchPath(pattern, c.Path) {
			n++
		}
	}
	return n
}

// matchPath reports whether p matches pattern; a malformed pattern matches
// nothing.
func matchPath(pattern, p string) bool {
	ok, err := path.Match(pattern, p)
	return err == nil && ok
}

// Fault is an answer the fake gives instead of the normal one, once, to the
// next request that matches.
type Fault struct {
	// Method matches the request's method; "" matches any.
	Method string
	// Path is a path.Match pattern over Call.Path, such as
	// "/repos/*/*/issues/*/comments".
	Path string
	// Status is the status answered.
	Status int
	// Header is added to the answer: Retry-After, X-RateLimit-Remaining,
	// X-RateLimit-Reset, …
	Header http.Header
	// Body is the answer's body; when empty, GitHub's body for Status is
	// used (a rate limit message for 403 with X-RateLimit-Remaining: 0, a
	// secondary rate limit message for other 403s and 429s, …).
	Body string
	// AfterEffect lets the request take effect before the fault answers, as
	// when GitHub acted but its answer was lost.
	AfterEffect bool
}

// FailNext makes the next request with method whose path matches
// pathPattern answer status with header and GitHub's body for it.
func (f *Fake) FailNext(method, pathPattern string, status int, header http.Header) {
	f.Inject(Fault{Method: method, Path: pathPattern, Status: status, Header: header})
}

// Inject queues ft; faults match in the order they were injected.
func (f *Fake) Inject(ft Fault) {
	if _, err := path.Match(ft.Path, ""); err != nil {
		f.fatalf("fault path %q: %v", ft.Path, err)
	}
	if ft.Status < 100 || ft.Status > 599 {
		f.fatalf("fault status %d", ft.Status)
	}
	h := http.Header{} // canonical keys, whatever the caller wrote
	for k, vs := range ft.Header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	ft.Header = h
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, &ft)
}

// PendingFaults returns how many injected faults have not fired yet.
func (f *Fake) PendingFaults() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.faults)
}

// takeFault removes and returns the first fault matching the request.
func (f *Fake) takeFault(method, p string) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, ft := range f.faults {
		if (ft.Method == "" || ft.Method == method) && matchPath(ft.Path, p) {
			f.faults = append(f.faults[:i], f.faults[i+1:]...)
			return ft
		}
	}
	return nil
}

// write answers the fault.
func (ft *Fault) write(w http.ResponseWriter, appID int64) {
	for k, vs := range ft.Header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(ft.Status)
	body := ft.Body
	if body == "" {
		body = defaultFaultBody(ft.Status, ft.Header, appID)
	}
	_, _ = w.Write([]byte(body))
}

// defaultFaultBody is the body GitHub sends with status.
func defaultFaultBody(status int, h http.Header, appID int64) string {
	const (
		primaryDoc   = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limit"
		secondaryDoc = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
	)
	switch {
	case status == http.StatusForbidden && h.Get("X-RateLimit-Remaining") == "0":
		return fmt.Sprintf(`{"message":"API rate limit exceeded for installation ID %d.","documentation_url":%q}`, appID, primaryDoc)
	case status == http.StatusForbidden || status == http.StatusTooManyRequests:
		return fmt.Sprintf(`{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":%q}`, secondaryDoc)
	case status == http.StatusUnprocessableEntity:
		return `{"message":"Validation Failed","documentation_url":"https://docs.github.com/rest"}`
	case status >= 500:
		return `{"message":"Server Error"}`
	default:
		return `{"message":` + strconv.Quote(http.StatusText(status)) + `}`
	}
}
