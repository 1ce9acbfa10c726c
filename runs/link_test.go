package runs

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

const linkRunID = "20250102T150405Z-1a2b3c4d"

func TestSignLinkShape(t *testing.T) {
	t.Parallel()
	key := LinkKey("webhook secret")
	exp := t0.Add(336 * time.Hour)
	tests := []struct {
		name, publicURL, wantPrefix string
	}{
		{"root", "https://bot.example.com", "https://bot.example.com/runs/" + linkRunID + "?"},
		{"trailing slash", "https://bot.example.com/", "https://bot.example.com/runs/" + linkRunID + "?"},
		{"path prefix", "http://127.0.0.1:8080/agentfix", "http://127.0.0.1:8080/agentfix/runs/" + linkRunID + "?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			link, err := SignLink(key, tt.publicURL, linkRunID, exp)
			if err != nil {
				t.Fatalf("SignLink: %v", err)
			}
			if !strings.HasPrefix(link, tt.wantPrefix) {
				t.Fatalf("SignLink = %q, want prefix %q", link, tt.wantPrefix)
			}
			u, err := url.Parse(link)
			if err != nil {
				t.Fatalf("parse %q: %v", link, err)
			}
			q := u.Query()
			if got, want := q.Get("exp"), strconv.FormatInt(exp.Unix(), 10); got != want {
				t.Errorf("exp = %q, want %q", got, want)
			}
			if err := VerifyLink(key, linkRunID, q.Get("exp"), q.Get("sig"), t0); err != nil {
				t.Errorf("VerifyLink of a fresh link: %v", err)
			}
		})
	}
}

func TestVerifyLink(t *testing.T) {
	t.Parallel()
	key := LinkKey("webhook secret")
	exp := t0.Add(time.Hour)
	link, err := SignLink(key, "https://bot.example.com", linkRunID, exp)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(link)
	e, sig := u.Query().Get("exp"), u.Query().Get("sig")
	flipped := []byte(sig)
	if flipped[0] == 'A' {
		flipped[0] = 'B'
	} else {
		flipped[0] = 'A'
	}
	tests := []struct {
		name      string
		key       []byte
		runID     string
		exp, sig  string
		now       time.Time
		wantError error
	}{
		{"good", key, linkRunID, e, sig, t0, nil},
		{"good a second before expiry", key, linkRunID, e, sig, exp.Add(-time.Second), nil},
		{"expired at exp", key, linkRunID, e, sig, exp, ErrLinkExpired},
		{"expired later", key, linkRunID, e, sig, exp.Add(24 * time.Hour), ErrLinkExpired},
		{"tampered signature", key, linkRunID, e, string(flipped), t0, ErrLinkInvalid},
		{"signature of another run", key, "20250102T150405Z-00000000", e, sig, t0, ErrLinkInvalid},
		{"extended expiry", key, linkRunID, strconv.FormatInt(exp.Add(time.Hour).Unix(), 10), sig, t0, ErrLinkInvalid},
		{"other key", LinkKey("another secret"), linkRunID, e, sig, t0, ErrLinkInvalid},
		{"empty key", nil, linkRunID, e, sig, t0, ErrLinkInvalid},
		{"missing signature", key, linkRunID, e, "", t0, ErrLinkInvalid},
		{"signature not base64url", key, linkRunID, e, sig + "!", t0, ErrLinkInvalid},
		{"exp with a plus sign", key, linkRunID, "+" + e, sig, t0, ErrLinkInvalid},
		{"exp not a number", key, linkRunID, "tomorrow", sig, t0, ErrLinkInvalid},
		{"missing exp", key, linkRunID, "", sig, t0, ErrLinkInvalid},
		{"run id not an id", key, "../" + linkRunID, e, sig, t0, ErrLinkInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyLink(tt.key, tt.runID, tt.exp, tt.sig, tt.now)
			if !errors.Is(err, tt.wantError) || (tt.wantError == nil) != (err == nil) {
				t.Errorf("VerifyLink = %v, want %v", err, tt.wantError)
			}
		})
	}
}

func TestSignLinkErrors(t *testing.T) {
	t.Parallel()
	key := LinkKey("webhook secret")
	tests := []struct {
		name, publicURL, runID string
		key                    []byte
		want                   string
	}{
		{"empty key", "https://bot.example.com", linkRunID, nil, "empty key"},
		{"bad run id", "https://bot.example.com", "run-1", key, `run id "run-1"`},
		{"empty public URL", "", linkRunID, key, `public URL "" is not an http(s) URL`},
		{"public URL without scheme", "bot.example.com", linkRunID, key, "is not an http(s) URL"},
		{"public URL of another scheme", "ftp://bot.example.com", linkRunID, key, "is not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			link, err := SignLink(tt.key, tt.publicURL, tt.runID, t0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("SignLink = %q, %v; want an error containing %q", link, err, tt.want)
			}
		})
	}
}

func TestLinkKey(t *testing.T) {
	t.Parallel()
	a, b := LinkKey("secret one"), LinkKey("secret two")
	if len(a) != 32 {
		t.Errorf("len(LinkKey) = %d, want 32", len(a))
	}
	if string(a) == string(b) {
		t.Error("two secrets derive the same link key")
	}
	if string(a) == "secret one" || string(LinkKey("secret one")) != string(a) {
		t.Error("LinkKey is not a deterministic derivation distinct from the secret")
	}
}
