package main

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/joho/godotenv"

	"github.com/agentfix/agentfix/ghapp/ghfake"
)

// TestSetupThenRestart creates the App through /setup of `bot serve`
// against a fake GitHub, then runs Main again in the same working
// directory: it loads .env, is no longer in setup mode, and /setup is gone.
func TestSetupThenRestart(t *testing.T) {
	t.Parallel()
	f := ghfake.New(t)
	dir := t.TempDir()
	environ := []string{"AGENTFIX_GITHUB_API_URL=" + f.APIURL(), "AGENTFIX_GITHUB_WEB_URL=" + f.URL() + "/"}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	bot := startIn(t, dir, environ, "serve")
	resp, err := client.Get(bot.addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || got != "/setup" {
		t.Errorf("GET / = %d to %q, want 302 to /setup", resp.StatusCode, got)
	}
	resp, err = client.PostForm(bot.addr+"/setup", url.Values{"name": {"agentfix-test"}, "owner": {"personal"}})
	if err != nil {
		t.Fatal(err)
	}
	review, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`action="([^"]*/settings/apps/new\?state=([0-9a-f]+))"`).FindStringSubmatch(string(review))
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("POST /setup = %d, want 200 and a form posting to GitHub:\n%s", resp.StatusCode, review)
	}
	if want := f.URL() + "/settings/apps/new?state="; !strings.HasPrefix(html.UnescapeString(m[1]), want) {
		t.Errorf("form action = %s, want it under %s", m[1], want)
	}
	conv := f.AddManifestCode("the-code")
	resp, err = client.Get(bot.addr + "/setup/callback?code=the-code&state=" + m[2])
	if err != nil {
		t.Fatal(err)
	}
	done, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("callback = %d, want 200:\n%s", resp.StatusCode, done)
	}
	if err := bot.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	info, err := os.Stat(filepath.Join(dir, ".env"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf(".env: %v, mode %v; want 0600", err, info.Mode().Perm())
	}
	env, err := godotenv.Read(filepath.Join(dir, ".env"))
	if err != nil {
		t.Fatal(err)
	}
	if env["AGENTFIX_APP_ID"] != "4242" || env["AGENTFIX_WEBHOOK_SECRET"] != conv.WebhookSecret || env["AGENTFIX_PRIVATE_KEY_FILE"] == "" {
		t.Errorf(".env = %v, want the App id, key file and webhook secret", env)
	}

	// serve with an App also runs the workers, which need a model.
	again := startIn(t, dir, append(environ, "AGENTFIX_MODEL=openai/gpt-5", "OPENAI_API_KEY=test-key", "AGENTFIX_DATA_DIR="+t.TempDir()), "serve")
	if code, _ := get(t, again.addr+"/setup"); code != http.StatusNotFound {
		t.Errorf("GET /setup after the restart = %d, want 404", code)
	}
	resp, err = http.Post(again.addr+"/webhook", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned POST /webhook after the restart = %d, want 401 (the edge is served)", resp.StatusCode)
	}
	if err := again.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if logs := again.stderr.String(); strings.Contains(logs, "setup mode") {
		t.Errorf("the restarted bot still runs in setup mode:\n%s", logs)
	}
}
