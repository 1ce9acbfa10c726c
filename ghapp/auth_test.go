package ghapp_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/ghapp"
)

func TestNewRejectsBadOptions(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	tests := []struct {
		name string
		opts ghapp.Options
		want string
	}{
		{"no app id", ghapp.Options{PrivateKey: pemKey}, "app id must be positive"},
		{"no key", ghapp.Options{AppID: 1}, "private key is empty"},
		{"bad key", ghapp.Options{AppID: 1, PrivateKey: []byte("not a key")}, "parse private key"},
		{"relative api url", ghapp.Options{AppID: 1, PrivateKey: pemKey, APIURL: "api.example.com/v3"}, "must be http(s)://host"},
		{"api url with credentials", ghapp.Options{AppID: 1, PrivateKey: pemKey, APIURL: "https://u:p@ghe.example.com/api/v3/"}, "without credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ghapp.New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New() error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestParseRepo(t *testing.T) {
	tests := []struct {
		in      string
		want    ghapp.Repo
		wantErr bool
	}{
		{in: "acme/widget", want: ghapp.Repo{Owner: "acme", Name: "widget"}},
		{in: "a-b/c.d_e", want: ghapp.Repo{Owner: "a-b", Name: "c.d_e"}},
		{in: "acme", wantErr: true},
		{in: "acme/", wantErr: true},
		{in: "/widget", wantErr: true},
		{in: "acme/widget/x", wantErr: true},
		{in: "acme/..", wantErr: true},
		{in: "acme/wid get", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ghapp.ParseRepo(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseRepo(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseRepo(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if !tt.wantErr && got.String() != tt.in {
				t.Errorf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}

func TestIdentityUsesTheJWTAndIsCached(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	for range 2 {
		id, err := e.app.Identity(ctx)
		if err != nil {
			t.Fatalf("Identity: %v", err)
		}
		want := ghapp.Identity{ID: e.f.AppID(), Slug: e.f.AppSlug(), Name: e.f.AppSlug(), HTMLURL: e.f.URL() + "/apps/" + e.f.AppSlug(), BotLogin: e.f.BotLogin()}
		if diff := cmp.Diff(want, id); diff != "" {
			t.Errorf("Identity (-want +got):\n%s", diff)
		}
	}
	calls := e.f.Calls()
	if len(calls) != 1 || calls[0].Path != "/app" || calls[0].Auth != "jwt" || calls[0].Status != http.StatusOK {
		t.Errorf("calls = %+v, want one GET /app with a JWT answered 200", calls)
	}
}

func TestWrongKeyIsRefusedWithoutRetry(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	e := setup(t, func(o *ghapp.Options) { o.PrivateKey = other })
	_, err = e.app.Identity(context.Background())
	if got := ghapp.HTTPStatus(err); got != http.StatusUnauthorized {
		t.Fatalf("Identity with another key: status %d (err %v), want 401", got, err)
	}
	if _, err := e.client.Issue(context.Background(), widget, 1); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("Issue with another key: err = %v, want the token refresh's 401", err)
	}
	if n := e.countCalls("", "/app*"); n != 1 {
		t.Errorf("GET /app sent %d times, want 1", n)
	}
	if n := e.countCalls("POST", "/app/installations/*/access_tokens"); n != 1 {
		t.Errorf("token requests = %d, want 1 (401 is not retried)", n)
	}
}

func TestInstallationTokenIsCachedAndRefreshedNearExpiry(t *testing.T) {
	tests := []struct {
		name       string
		ttl        time.Duration
		wantTokens int
	}{
		// ghinstallation renews a token in its last minute.
		{"one hour tokens are reused", time.Hour, 1},
		{"tokens in their last minute are renewed", 30 * time.Second, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t)
			e.f.SetTokenTTL(tt.ttl)
			n := e.f.AddIssue(widgetName, ghfakeIssue("crash"))
			for range 3 {
				if _, err := e.client.Issue(context.Background(), widget, n); err != nil {
					t.Fatalf("Issue: %v", err)
				}
			}
			if got := e.countCalls("POST", "/app/installations/7/access_tokens"); got != tt.wantTokens {
				t.Errorf("token requests = %d, want %d", got, tt.wantTokens)
			}
			for _, c := range e.f.Calls() {
				if strings.HasPrefix(c.Path, "/repos/") && c.Auth != "token" {
					t.Errorf("%s %s sent with %s, want an installation token", c.Method, c.Path, c.Auth)
				}
			}
		})
	}
}

func TestInstallationRejectsBadIDs(t *testing.T) {
	e := setup(t)
	if _, err := e.app.Installation(0); err == nil {
		t.Error("Installation(0) succeeded, want an error")
	}
	if _, err := e.app.Token(context.Background(), 0, widget); err == nil {
		t.Error("Token(0) succeeded, want an error")
	}
	if _, err := e.app.Token(context.Background(), installationID, ghapp.Repo{Owner: "acme", Name: "../x"}); err == nil {
		t.Error("Token for an invalid repository succeeded, want an error")
	}
}

func TestTokenIsScopedCachedAndRenewed(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	tok, err := e.app.Token(ctx, installationID, widget)
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	info, ok := e.f.Token(tok.Value)
	if !ok || !cmp.Equal(info.Repos, []string{"acme/widget"}) || info.Installation != installationID {
		t.Errorf("token = %+v (issued %v), want one of installation %d scoped to [acme/widget]", info, ok, installationID)
	}
	if !tok.ExpiresAt.Equal(info.ExpiresAt) {
		t.Errorf("ExpiresAt = %v, want %v", tok.ExpiresAt, info.ExpiresAt)
	}
	again, err := e.app.Token(ctx, installationID, widget)
	if err != nil {
		t.Fatalf("Token again: %v", err)
	}
	if again.Value != tok.Value {
		t.Error("a second Token call fetched a new token, want the cached one")
	}

	// The unscoped token of API calls is a different cache entry.
	if _, err := e.client.GetRepository(ctx, widget); err != nil {
		t.Fatalf("GetRepository: %v", err)
	}
	issued := e.f.IssuedTokens()
	if len(issued) != 2 {
		t.Fatalf("issued %d tokens, want 2 (one scoped, one for the API)", len(issued))
	}
	if info, _ := e.f.Token(issued[1]); info.Repos != nil {
		t.Errorf("API token scope = %v, want unscoped", info.Repos)
	}

	// The other repository gets its own token.
	other, err := e.app.Token(ctx, installationID, ghapp.Repo{Owner: "acme", Name: "other"})
	if err != nil {
		t.Fatalf("Token for other: %v", err)
	}
	if other.Value == tok.Value {
		t.Error("the token of acme/other is the one of acme/widget")
	}

	// Tokens closer to expiry than MinTokenValidity are replaced.
	e.f.SetTokenTTL(5 * time.Minute)
	e.app.Forget(installationID)
	short1, err := e.app.Token(ctx, installationID, widget)
	if err != nil {
		t.Fatalf("Token after Forget: %v", err)
	}
	short2, err := e.app.Token(ctx, installationID, widget)
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	if short1.Value == short2.Value || short1.Value == tok.Value {
		t.Error("tokens valid for less than MinTokenValidity were reused, want fresh ones")
	}
}

func TestForgetDropsClients(t *testing.T) {
	e := setup(t)
	before, _ := e.app.Installation(installationID)
	e.app.Forget(installationID)
	after, err := e.app.Installation(installationID)
	if err != nil {
		t.Fatal(err)
	}
	if before == after {
		t.Error("Installation after Forget returned the forgotten client")
	}
	same, _ := e.app.Installation(installationID)
	if same != after {
		t.Error("Installation did not cache the client")
	}
}

func TestTokenIsRedacted(t *testing.T) {
	tok := ghapp.Token{Value: "ghs_secret", ExpiresAt: time.Unix(0, 0)}
	var logs syncBuffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("token", "tok", tok)
	for _, s := range []string{fmt.Sprint(tok), fmt.Sprintf("%v %+v %s %#v", tok, tok, tok, tok), logs.String()} {
		if strings.Contains(s, "ghs_secret") {
			t.Errorf("token printed: %s", s)
		}
	}
}

func TestSuspendedInstallation(t *testing.T) {
	e := setup(t)
	e.f.SuspendInstallation(installationID)
	_, err := e.app.Token(context.Background(), installationID, widget)
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("Token of a suspended installation: err = %v, want a 403", err)
	}
	var rl *ghapp.RateLimitError
	if errors.As(err, &rl) {
		t.Errorf("a suspension was taken for a rate limit: %v", err)
	}
}

func TestConcurrentUseIsSafe(t *testing.T) {
	e := setup(t)
	e.f.SetTokenTTL(30 * time.Second) // every call renews its token
	n := e.f.AddIssue(widgetName, ghfakeIssue("Crash"))
	ctx := context.Background()
	errs := make(chan error, 24)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := e.app.Installation(installationID)
			if err == nil {
				_, err = c.Issue(ctx, widget, n)
			}
			errs <- err
			_, err = e.app.Token(ctx, installationID, widget)
			errs <- err
			_, err = e.app.Identity(ctx)
			errs <- err
			if i%4 == 0 {
				e.app.Forget(installationID)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
