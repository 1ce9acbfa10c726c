package runs

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Signed run links let someone without the admin token read one run's page,
// /runs/<run_id>?exp=<unix seconds>&sig=<signature>, until exp: the pull
// request body carries one. The signature is HMAC-SHA256, keyed with
// LinkKey, over a version tag, the run id and exp; it is unpadded base64url.

// linkKeyContext is the fixed context LinkKey derives the link key with.
const linkKeyContext = "agentfix run link v1"

// linkVersion starts the signed message, so a later format cannot be
// confused with this one.
const linkVersion = "run-link-v1"

// Errors of VerifyLink.
var (
	// ErrLinkInvalid: the link is malformed or its signature does not
	// match (tampered, or signed with another key).
	ErrLinkInvalid = errors.New("run link signature is invalid")
	// ErrLinkExpired: the signature matches but the link has expired.
	ErrLinkExpired = errors.New("run link has expired")
)

// LinkKey derives the key of signed run links from the webhook secret
// (AGENTFIX_WEBHOOK_SECRET) with a fixed context string, so no other secret
// is needed; rotating the webhook secret invalidates every link.
func LinkKey(webhookSecret string) []byte {
	mac := hmac.New(sha256.New, []byte(webhookSecret))
	mac.Write([]byte(linkKeyContext))
	return mac.Sum(nil)
}

// SignLink returns the signed link to run runID's page under publicURL
// (AGENTFIX_PUBLIC_URL), valid until exp.
func SignLink(key []byte, publicURL, runID string, exp time.Time) (string, error) {
	if len(key) == 0 {
		return "", errors.New("sign run link: empty key")
	}
	if err := checkID(runID); err != nil {
		return "", fmt.Errorf("sign run link: %w", err)
	}
	base, err := url.Parse(publicURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return "", fmt.Errorf("sign run link: public URL %q is not an http(s) URL", publicURL)
	}
	e := strconv.FormatInt(exp.Unix(), 10)
	q := url.Values{"exp": {e}, "sig": {linkSignature(key, runID, e)}}
	return strings.TrimRight(publicURL, "/") + "/runs/" + runID + "?" + q.Encode(), nil
}

// VerifyLink checks the exp and sig query values of a link to run runID at
// time now: nil when the link is good, an error wrapping ErrLinkInvalid or
// ErrLinkExpired when it is not.
func VerifyLink(key []byte, runID, exp, sig string, now time.Time) error {
	if len(key) == 0 {
		return fmt.Errorf("verify run link: empty key: %w", ErrLinkInvalid)
	}
	if err := checkID(runID); err != nil {
		return fmt.Errorf("verify run link: %w: %w", err, ErrLinkInvalid)
	}
	expUnix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || strconv.FormatInt(expUnix, 10) != exp {
		return fmt.Errorf("verify run link: exp %q is not a Unix time: %w", exp, ErrLinkInvalid)
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return fmt.Errorf("verify run link: sig is not base64url: %w", ErrLinkInvalid)
	}
	if !hmac.Equal(got, linkMAC(key, runID, exp)) {
		return fmt.Errorf("verify run link for run %q: %w", runID, ErrLinkInvalid)
	}
	if expires := time.Unix(expUnix, 0); !now.Before(expires) {
		return fmt.Errorf("verify run link for run %s: expired at %s: %w", runID, expires.UTC().Format(time.RFC3339), ErrLinkExpired)
	}
	return nil
}

func linkSignature(key []byte, runID, exp string) string {
	return base64.RawURLEncoding.EncodeToString(linkMAC(key, runID, exp))
}

func linkMAC(key []byte, runID, exp string) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(linkVersion + "\n" + runID + "\n" + exp))
	return mac.Sum(nil)
}
