package ghapp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfix/agentfix/ghapp"
)

// git runs the git CLI in dir, authenticated with token through an
// http.extraHeader (never in a URL), without any user configuration or
// prompt. It returns the combined output.
func git(t *testing.T, dir, token string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var full []string
	if token != "" {
		cred := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
		full = append(full, "-c", "http.extraHeader=Authorization: Basic "+cred)
	}
	full = append(full, "-c", "credential.helper=", "-c", "protocol.version=2")
	cmd := exec.CommandContext(ctx, "git", append(full, args...)...)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=", "LC_ALL=C",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.invalid",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.invalid",
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if out.Len() > 1<<20 {
		out.Truncate(1 << 20)
	}
	if err != nil {
		return out.String(), fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

func TestGitCloneAndPushWithRepoToken(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	tok, err := e.app.Token(ctx, installationID, widget)
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	repo, err := e.client.GetRepository(ctx, widget)
	if err != nil {
		t.Fatalf("GetRepository: %v", err)
	}
	if repo.CloneURL != e.f.CloneURL(widgetName) {
		t.Fatalf("clone_url = %q, want the fake's git server %q", repo.CloneURL, e.f.CloneURL(widgetName))
	}

	work := filepath.Join(t.TempDir(), "work")
	if _, err := git(t, "", tok.Value, "clone", "--quiet", repo.CloneURL, work); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(work, "README.md"))
	if err != nil || string(data) != "# widget\n" {
		t.Fatalf("cloned README.md = %q, %v; want the seeded file", data, err)
	}
	if strings.Contains(readFile(t, filepath.Join(work, ".git", "config")), tok.Value) {
		t.Error("the token was written to .git/config")
	}

	if err := os.WriteFile(filepath.Join(work, "fix.txt"), []byte("fixed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := git(t, work, "", "add", "fix.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := git(t, work, "", "commit", "--quiet", "-m", "Fix the crash"); err != nil {
		t.Fatal(err)
	}
	const ref = "refs/heads/agent-fix/issue-1"
	if _, err := git(t, work, tok.Value, "push", "--quiet", "origin", "HEAD:"+ref); err != nil {
		t.Fatal(err)
	}
	local, err := git(t, work, "", "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	sha, ok := e.f.Branch(widgetName, "agent-fix/issue-1")
	if !ok || sha != strings.TrimSpace(local) {
		t.Errorf("pushed branch = %q (exists %v), want %q", sha, ok, strings.TrimSpace(local))
	}
	files := e.f.Files(widgetName, "agent-fix/issue-1")
	if files["fix.txt"] != "fixed\n" || files["README.md"] != "# widget\n" {
		t.Errorf("pushed tree = %v, want README.md and fix.txt", files)
	}
	if c := e.f.HeadCommit(widgetName, "agent-fix/issue-1"); c.Message != "Fix the crash" || c.AuthorName != "Test" {
		t.Errorf("head commit = %+v, want the pushed one", c)
	}

	// The pull request sees the pushed head.
	pr, err := e.client.CreatePR(ctx, widget, ghapp.NewPullRequest{Title: "Fix #1", Body: "Fixes #1", Head: "agent-fix/issue-1", Base: "main"})
	if err != nil {
		t.Fatalf("CreatePR: %v", err)
	}
	if pr.HeadSHA != sha {
		t.Errorf("PR head = %q, want the pushed %q", pr.HeadSHA, sha)
	}
}

func TestGitServerAcceptsOnlyCurrentTokensForTheirRepository(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	widgetTok, err := e.app.Token(ctx, installationID, widget)
	if err != nil {
		t.Fatal(err)
	}
	otherTok, err := e.app.Token(ctx, installationID, ghapp.Repo{Owner: "acme", Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		token      string
		repo       string
		wantStatus int
	}{
		{"scoped token, its repository", widgetTok.Value, widgetName, http.StatusOK},
		{"scoped token, another repository", widgetTok.Value, otherName, http.StatusNotFound},
		{"other token, its repository", otherTok.Value, otherName, http.StatusOK},
		{"wrong token", "ghs_0000000000000000000000000000000000000000", widgetName, http.StatusUnauthorized},
		{"no token", "", widgetName, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := git(t, "", tt.token, "ls-remote", e.f.CloneURL(tt.repo))
			if (err == nil) != (tt.wantStatus == http.StatusOK) {
				t.Errorf("ls-remote error = %v, want success %v", err, tt.wantStatus == http.StatusOK)
			}
			if got := lastGitStatus(e); got != tt.wantStatus {
				t.Errorf("git server answered %d, want %d", got, tt.wantStatus)
			}
		})
	}

	t.Run("expired token", func(t *testing.T) {
		e.f.ExpireTokens()
		for _, args := range [][]string{
			{"ls-remote", e.f.CloneURL(widgetName)},
			{"push", e.f.CloneURL(widgetName), "HEAD:refs/heads/x"},
		} {
			if _, err := git(t, "", widgetTok.Value, args...); err == nil {
				t.Errorf("git %s with an expired token succeeded", args[0])
			}
			if got := lastGitStatus(e); got != http.StatusUnauthorized {
				t.Errorf("git %s with an expired token: server answered %d, want 401", args[0], got)
			}
		}
		if _, ok := e.f.Branch(widgetName, "x"); ok {
			t.Error("a push with an expired token created a branch")
		}
	})
}

// lastGitStatus is the status of the git server's last answer.
func lastGitStatus(e *env) int {
	calls := e.f.Calls()
	for i := len(calls) - 1; i >= 0; i-- {
		if strings.HasPrefix(calls[i].Path, "/git/") {
			return calls[i].Status
		}
	}
	return 0
}

func TestGitPushOfALargeChunkedPack(t *testing.T) {
	e := setup(t)
	tok, err := e.app.Token(context.Background(), installationID, widget)
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(t.TempDir(), "work")
	if _, err := git(t, "", tok.Value, "clone", "--quiet", e.f.CloneURL(widgetName), work); err != nil {
		t.Fatal(err)
	}
	// Incompressible content bigger than http.postBuffer makes git send a
	// chunked request, which the fake spools for CGI.
	big := make([]byte, 2<<20)
	for i := range big {
		big[i] = byte(i*7919 ^ i>>3)
	}
	if err := os.WriteFile(filepath.Join(work, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "big.bin"}, {"commit", "--quiet", "-m", "big"}} {
		if _, err := git(t, work, "", args...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := git(t, work, tok.Value, "-c", "http.postBuffer=65536", "push", "--quiet", "origin", "HEAD:refs/heads/big"); err != nil {
		t.Fatal(err)
	}
	got, err := e.f.ReadFile(widgetName, "big", "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(big) {
		t.Errorf("pushed big.bin differs (%d bytes, want %d)", len(got), len(big))
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
