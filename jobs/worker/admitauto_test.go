package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs/worker/store"
)

// autoGitHub is GitHub as an automatic task reads one pull request: the
// pull request (none when pr.Number is 0) and its commits.
type autoGitHub struct {
	GitHub // admitAuto needs PR and PRCommits alone

	pr      ghapp.PullRequest
	commits []ghapp.Commit
}

func (g *autoGitHub) PR(_ context.Context, _ ghapp.Repo, n int) (ghapp.PullRequest, error) {
	if g.pr.Number != n {
		return ghapp.PullRequest{}, fmt.Errorf("pull request %d: %w", n, ghapp.ErrNotFound)
	}
	return g.pr, nil
}

func (g *autoGitHub) PRCommits(context.Context, ghapp.Repo, int) ([]ghapp.Commit, error) {
	return g.commits, nil
}

// appFiles is readableFiles with the App's identity.
type appFiles struct {
	*readableFiles
	id ghapp.Identity
}

func (a appFiles) Identity(context.Context) (ghapp.Identity, error) { return a.id, nil }

// TestAdmitAuto: an automatic round starts only on the bot's open pull
// request at the event's head, in a repository whose configuration can be
// used and leaves ci on, whose automatic rounds nobody stopped, and onto
// whose branch no person pushed; otherwise the reason is said in words.
// The facts are read in that order and the first refusal wins.
func TestAdmitAuto(t *testing.T) {
	t.Parallel()
	const bot, head = "agentfix[bot]", "c0ffee"
	botCommit := ghapp.Commit{SHA: "1", AuthorLogin: bot, CommitterLogin: bot}
	// A commit made with the bot's commit email, which GitHub did not link
	// to an account, is the bot's too.
	botByEmail := ghapp.Commit{SHA: "2", AuthorName: "agentfix", AuthorEmail: "agentfix[bot]@users.noreply.github.com",
		CommitterName: "agentfix", CommitterEmail: "agentfix[bot]@users.noreply.github.com"}
	alice := ghapp.Commit{SHA: "3", AuthorLogin: "alice", AuthorName: "Alice", CommitterLogin: "web-flow", CommitterName: "GitHub"}
	botsPR := ghapp.PullRequest{Number: 5, State: "open", Author: bot, Head: "agent-fix/issue-1", HeadSHA: head}
	with := func(edit func(*ghapp.PullRequest)) ghapp.PullRequest {
		pr := botsPR
		edit(&pr)
		return pr
	}
	tests := []struct {
		name    string
		pr      ghapp.PullRequest
		commits []ghapp.Commit
		yml     string
		stopBy  string
		want    string
	}{
		{name: "the bot's pull request, its own commits", pr: botsPR, commits: []ghapp.Commit{botCommit, botByEmail}},
		{name: "no such pull request", want: "the pull request does not exist"},
		{name: "someone else's", pr: with(func(pr *ghapp.PullRequest) { pr.Author = "carol" }), want: "the pull request is not the bot's"},
		{name: "closed", pr: with(func(pr *ghapp.PullRequest) { pr.State = "closed" }), want: "the pull request is closed"},
		{name: "its head moved on", pr: with(func(pr *ghapp.PullRequest) { pr.HeadSHA = "beef" }), want: "the pull request's head moved on"},
		{name: "turned off", pr: botsPR, yml: "ci: {enabled: false}\n", want: "ci.enabled is false in .github/agent-fix.yml"},
		{name: "a configuration that cannot be used", pr: botsPR, yml: "ci: {enabled: maybe}\n", want: "the repository's configuration cannot be used"},
		{name: "stopped", pr: botsPR, stopBy: "alice", want: "@alice stopped the automatic rounds of the pull request"},
		{name: "a person's commit on top", pr: botsPR, commits: []ghapp.Commit{botCommit, alice}, want: "commits by @alice, @web-flow are on the branch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{}
			if tt.yml != "" {
				files["octo/widget:"+config.RepoFile] = tt.yml
			}
			l, gh := newSettingsLoader(files)
			inst := appFiles{readableFiles: gh, id: ghapp.Identity{BotLogin: bot}}
			l.inst = inst
			rdb := newRedis(t)
			w := &Worker{opts: Options{GitHub: inst}, settings: l, store: store.New(rdb, 5*time.Millisecond), publish: &publisher{inst: inst}}
			repo := ghapp.Repo{Owner: "octo", Name: "widget"}
			if tt.stopBy != "" {
				if err := w.store.StopAuto(t.Context(), repo, 5, tt.stopBy); err != nil {
					t.Fatal(err)
				}
			}
			a, why, err := w.admitAuto(t.Context(), &autoGitHub{pr: tt.pr, commits: tt.commits}, hInstall, repo, 5, head)
			if err != nil {
				t.Fatalf("admitAuto: %v", err)
			}
			if why != tt.want {
				t.Errorf("admitAuto refuses with %q, want %q", why, tt.want)
			}
			if tt.want == "" && (a.pr.Number != 5 || a.bot.BotLogin != bot) {
				t.Errorf("admitAuto = pull request %d, bot %q; want #5 of %s", a.pr.Number, a.bot.BotLogin, bot)
			}
		})
	}
}
