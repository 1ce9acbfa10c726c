package ghapp

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// ErrNotFound matches (with errors.Is) any error of a call GitHub answered
// with 404: a missing file, issue, pull request, branch or repository.
var ErrNotFound = errors.New("not found")

// ErrDraftUnsupported is returned by CreatePR when the repository does not
// accept draft pull requests (GitHub answers 422); the caller may open a
// regular pull request instead, marked incomplete in its title.
var ErrDraftUnsupported = errors.New("draft pull requests are not supported in this repository")

// RateLimitError reports a GitHub rate limit whose reset is further away than
// the App is configured to wait (or that persisted through every attempt).
type RateLimitError struct {
	// Reset is when GitHub said the limit lifts.
	Reset time.Time
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("github rate limit exceeded until %s", e.Reset.UTC().Format(time.RFC3339))
}

// APIError is a GitHub answer with a status the call does not accept.
type APIError struct {
	// Method and Path identify the request (the path without query).
	Method, Path string
	// Status is the HTTP status code.
	Status int
	// Message is GitHub's top-level message.
	Message string
	// Details holds the messages or codes of GitHub's "errors" list.
	Details []string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		s += ": " + e.Message
	}
	if len(e.Details) > 0 {
		s += " (" + strings.Join(e.Details, "; ") + ")"
	}
	return s
}

// Is reports whether target is ErrNotFound and the status is 404.
func (e *APIError) Is(target error) bool {
	return target == ErrNotFound && e.Status == http.StatusNotFound
}

// mentions reports whether GitHub's message or one of its details contains
// s, ignoring case.
func (e *APIError) mentions(s string) bool {
	s = strings.ToLower(s)
	if strings.Contains(strings.ToLower(e.Message), s) {
		return true
	}
	for _, d := range e.Details {
		if strings.Contains(strings.ToLower(d), s) {
			return true
		}
	}
	return false
}

// HTTPStatus returns the HTTP status of the GitHub answer behind err, or 0
// when err is not an *APIError (a connection error, a rate limit, a
// cancelled context).
func HTTPStatus(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// apiError turns go-github's error types into the package's own, so callers
// need not know go-github. Other errors pass through unchanged.
func apiError(err error) error {
	var rl *github.RateLimitError
	if errors.As(err, &rl) {
		return &RateLimitError{Reset: rl.Rate.Reset.Time}
	}
	var ab *github.AbuseRateLimitError
	if errors.As(err, &ab) {
		reset := time.Now()
		if ab.RetryAfter != nil {
			reset = reset.Add(*ab.RetryAfter)
		}
		return &RateLimitError{Reset: reset}
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		ae := &APIError{Status: er.Response.StatusCode, Message: er.Message}
		if r := er.Response.Request; r != nil {
			ae.Method, ae.Path = r.Method, r.URL.Path
		}
		for _, d := range er.Errors {
			switch {
			case d.Message != "":
				ae.Details = append(ae.Details, d.Message)
			case d.Code != "":
				ae.Details = append(ae.Details, fmt.Sprintf("%s %s %s", d.Resource, d.Field, d.Code))
			}
		}
		return ae
	}
	return err
}
