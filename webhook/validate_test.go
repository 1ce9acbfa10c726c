package webhook

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentfix/agentfix/jobs"
)

// TestTargetValidation sends deliveries whose fields a task uses hold what
// GitHub never sends: each that would start or stop work is refused with
// 400 and leaves no task or claim behind (before, a negative number got
// 503 on every redelivery, and the rest were queued); one that asks
// nothing of the bot is ignored whatever those fields hold.
func TestTargetValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	label := []edit{set("label.name", "agent-fix")}
	command := []edit{body("/agent-fix")}
	botPR := []edit{set("review.body", "/agent-fix"), set("pull_request.user.type", "Bot"), set("pull_request.user.login", "agentfix[bot]")}
	with := func(base []edit, more ...edit) []edit { return append(append([]edit(nil), base...), more...) }
	tests := []struct {
		name  string
		event string
		file  string
		edits []edit
		code  int
		want  string // the error of a 400, the reason of a 202
	}{
		{"negative issue number", "issues", "issues.labeled.json", with(label, set("issue.number", -1)), 400,
			"malformed issues payload: the issue or pull request number must be positive, got -1"},
		{"zero issue number", "issues", "issues.labeled.json", with(label, set("issue.number", 0)), 400,
			"malformed issues payload: the issue or pull request number must be positive, got 0"},
		{"no issue", "issues", "issues.labeled.json", with(label, set("issue", nil)), 400,
			"malformed issues payload: the issue or pull request number must be positive, got 0"},
		{"negative number of a closed issue", "issues", "issues.labeled.json", []edit{set("action", "closed"), set("issue.number", -2)}, 400,
			"malformed issues payload: the issue or pull request number must be positive, got -2"},
		{"negative number in a command", "issue_comment", "issue_comment.created.json", with(command, set("issue.number", -1)), 400,
			"malformed issue_comment payload: the issue or pull request number must be positive, got -1"},
		{"zero pull request number", "pull_request_review", "pull_request_review.submitted.json", with(botPR, set("pull_request.number", 0)), 400,
			"malformed pull_request_review payload: the issue or pull request number must be positive, got 0"},
		{"no sender", "issue_comment", "issue_comment.created.json", with(command, set("sender", nil)), 400,
			"malformed issue_comment payload: sender.login is missing"},
		{"empty sender login", "issues", "issues.labeled.json", with(label, set("sender.login", "")), 400,
			"malformed issues payload: sender.login is missing"},
		{"sender login with a path", "issue_comment", "issue_comment.created.json", with(command, set("sender.login", "../../orgs/acme")), 400,
			`malformed issue_comment payload: sender.login "../../orgs/acme" is not a GitHub login`},
		{"three-part full_name", "issue_comment", "issue_comment.created.json", with(command, set("repository.full_name", "a/b/c")), 400,
			`malformed issue_comment payload: repository.full_name "a/b/c" is not owner/name`},
		{"full_name with ..", "issues", "issues.labeled.json", with(label, set("repository.full_name", "../x")), 400,
			`malformed issues payload: repository.full_name "../x" is not owner/name`},
		{"full_name without owner", "pull_request_review_comment", "pull_request_review_comment.created.json", with(command, set("repository.full_name", "x")), 400,
			`malformed pull_request_review_comment payload: repository.full_name "x" is not owner/name`},
		{"no repository", "issues", "issues.labeled.json", []edit{set("action", "closed"), set("repository", nil)}, 400,
			"malformed issues payload: repository.full_name is missing"},
		{"removed repository with a bad full_name", "installation_repositories", "installation_repositories.removed.json",
			[]edit{set("repositories_removed", []any{map[string]any{"id": 1, "name": "x", "full_name": "octocat/x/y"}})}, 400,
			`malformed installation_repositories payload: repositories_removed: repository.full_name "octocat/x/y" is not owner/name`},
		{"negative installation", "issue_comment", "issue_comment.created.json", with(command, set("installation.id", -5)), 400,
			"malformed issue_comment payload: installation.id must be positive, got -5"},
		{"two faults", "issue_comment", "issue_comment.created.json", with(command, set("issue.number", -1), set("sender", nil)), 400,
			"malformed issue_comment payload: the issue or pull request number must be positive, got -1\nsender.login is missing"},
		{"check suite with a short head", "check_suite", "check_suite.completed.json", []edit{set("check_suite.head_sha", "ec26c3e")}, 400,
			`malformed check_suite payload: head_sha "ec26c3e" is not a commit id`},
		{"check suite with a zero pull request number", "check_suite", "check_suite.completed.json",
			[]edit{set("check_suite.pull_requests", []any{map[string]any{"number": 0}})}, 400,
			"malformed check_suite payload: pull request number 0 is not positive"},
		{"check run with a bad full_name", "check_run", "check_run.completed.json", []edit{set("repository.full_name", "a/b/c")}, 400,
			`malformed check_run payload: repository.full_name "a/b/c" is not owner/name`},
		{"push with a bad after", "push", "push.json", []edit{set("after", "HEAD")}, 400,
			`malformed push payload: after "HEAD" is not a commit id`},

		{"bad head of a passing check run", "check_run", "check_run.completed.json", []edit{set("check_run.conclusion", "success"), set("check_run.head_sha", "x")}, 202,
			"the check run did not fail; its check suite's completion reads the checks"},
		{"bad after of a push to another branch", "push", "push.json", []edit{set("ref", "refs/heads/dev"), set("after", "x")}, 202,
			"push to dev, not to the default branch master"},
		{"negative number, not a trigger", "issues", "issues.labeled.json", []edit{set("action", "unlabeled"), set("issue.number", -1)}, 202,
			"issues action unlabeled is not a trigger"},
		{"negative number, no command", "issue_comment", "issue_comment.created.json", []edit{set("issue.number", -1)}, 202,
			"no /agent-fix command"},
		{"bad full_name, other label", "issues", "issues.labeled.json", []edit{set("repository.full_name", "a/b/c")}, 202,
			`label "bug" is not the trigger label "agent-fix"`},
		{"no installation", "issue_comment", "issue_comment.created.json", with(command, set("installation", nil), set("issue.number", -1)), 202,
			"no installation in the payload (not a GitHub App delivery)"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := h.deliver(t, tt.event, fmt.Sprintf("d-v%d", i), payload(t, tt.file, tt.edits...))
			msg := got.body.Reason
			if tt.code != 202 {
				msg = errorOf(got)
			} else if got.body.Status != "ignored" {
				t.Errorf("status %q, want ignored", got.body.Status)
			}
			if got.code != tt.code || msg != tt.want {
				t.Errorf("reply = %d %q, want %d %q", got.code, msg, tt.code, tt.want)
			}
		})
	}
	if got := append(h.tasks(t, jobs.QueueAgent), h.tasks(t, jobs.QueueInteractive)...); len(got) != 0 {
		t.Errorf("tasks after refused and ignored deliveries = %v, want none", got)
	}
	if keys := h.rdb.Keys(context.Background(), "agentfix:delivery:*").Val(); len(keys) != 0 {
		t.Errorf("claims after refused and ignored deliveries = %v, want none", keys)
	}
}

// TestCancelNeedsNoSender: closing an issue stops its work whoever closed
// it; the sender is checked only for what acts for it.
func TestCancelNeedsNoSender(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	got := h.deliver(t, "issues", "d-close", payload(t, "issues.labeled.json", set("action", "closed"), set("sender", nil)))
	if want := (response{Status: "queued", Reason: "cancel queued (issue_closed)"}); got.code != 202 || got.body != want {
		t.Errorf("reply = %d %+v, want 202 %+v", got.code, got.body, want)
	}
}

func TestValidLogin(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		login string
		ok    bool
	}{
		{"Codertocat", true},
		{"octo-cat42", true},
		{"agentfix[bot]", true},
		{"alice_acme", true}, // an Enterprise Managed User
		{"", false},
		{"[bot]", false},
		{"..", false},
		{"a/b", false},
		{"a.b", false},
		{"a%2F", false},
		{"a?b", false},
		{"a b", false},
		{"ä", false},
		{strings.Repeat("a", 100), true},
		{strings.Repeat("a", 101), false},
	} {
		if got := validLogin(tt.login); got != tt.ok {
			t.Errorf("validLogin(%q) = %v, want %v", tt.login, got, tt.ok)
		}
	}
}
