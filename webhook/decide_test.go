package webhook

import (
	"testing"

	"github.com/agentfix/agentfix/jobs"
	"github.com/google/go-cmp/cmp"
)

var (
	helloWorld = jobs.Repo{
		ID: 186853002, Owner: "Codertocat", Name: "Hello-World", FullName: "Codertocat/Hello-World",
		CloneURL: "https://github.com/Codertocat/Hello-World.git", DefaultBranch: "master",
	}
	codertocat = jobs.User{Login: "Codertocat", ID: 21031067, Type: "User"}
	testRules  = rules{appID: 42, triggerLabel: "agent-fix", command: "/agent-fix"}
)

const testInstallation = 2311213

// The commits of the check and push payloads.
const (
	checkHead = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	pushAfter = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"
)

// TestDecide runs the routing of every handler on real payloads, without
// HTTP or Redis.
func TestDecide(t *testing.T) {
	t.Parallel()
	const d = "d-1"
	issueComment := jobs.Trigger{Kind: jobs.TriggerIssueComment, CommentID: 492700400, URL: "https://github.com/Codertocat/Hello-World/issues/1#issuecomment-492700400"}
	prTrigger := jobs.Trigger{Kind: jobs.TriggerReviewComment, CommentID: 284312630, ReviewID: 237895671, URL: "https://github.com/Codertocat/Hello-World/pull/2#discussion_r284312630"}
	reviewTrigger := jobs.Trigger{Kind: jobs.TriggerReview, ReviewID: 237895671, URL: "https://github.com/Codertocat/Hello-World/pull/2#pullrequestreview-237895671"}
	bot := jobs.User{Login: "agentfix[bot]", ID: 21031067, Type: "Bot"}
	tests := []struct {
		name  string
		event string
		file  string
		edits []edit
		want  decision
	}{
		{
			name: "trigger label", event: "issues", file: "issues.labeled.json",
			edits: []edit{set("label.name", "agent-fix")},
			want: decision{fix: &jobs.FixIssue{
				DeliveryID: d, Installation: testInstallation, Repo: helloWorld, Number: 1,
				Trigger:   jobs.Trigger{Kind: jobs.TriggerLabel, URL: "https://github.com/Codertocat/Hello-World/issues/1"},
				Requester: codertocat,
			}},
		},
		{
			name: "trigger label in another case", event: "issues", file: "issues.labeled.json",
			edits: []edit{set("label.name", "Agent-Fix")},
			want: decision{fix: &jobs.FixIssue{
				DeliveryID: d, Installation: testInstallation, Repo: helloWorld, Number: 1,
				Trigger:   jobs.Trigger{Kind: jobs.TriggerLabel, URL: "https://github.com/Codertocat/Hello-World/issues/1"},
				Requester: codertocat,
			}},
		},
		{name: "other label", event: "issues", file: "issues.labeled.json", want: ignored(`label "bug" is not the trigger label "agent-fix"`)},
		{name: "label by a bot", event: "issues", file: "issues.labeled.json", edits: []edit{set("label.name", "agent-fix"), set("sender.type", "Bot")}, want: ignored("sender Codertocat is a bot")},
		{name: "label on a closed issue", event: "issues", file: "issues.labeled.json", edits: []edit{set("label.name", "agent-fix"), set("issue.state", "closed")}, want: ignored("issue is closed")},
		{name: "label without installation", event: "issues", file: "issues.labeled.json", edits: []edit{set("label.name", "agent-fix"), set("installation", nil)}, want: ignored("no installation in the payload (not a GitHub App delivery)")},
		{
			name: "issue closed", event: "issues", file: "issues.labeled.json", edits: []edit{set("action", "closed")},
			want: decision{cancel: &jobs.Cancel{DeliveryID: d, Installation: testInstallation, Reason: jobs.CancelIssueClosed, Repos: []jobs.Repo{helloWorld}, Number: 1}},
		},
		{name: "issue unlabeled", event: "issues", file: "issues.labeled.json", edits: []edit{set("action", "unlabeled")}, want: ignored("issues action unlabeled is not a trigger")},
		{
			name: "command on an issue", event: "issue_comment", file: "issue_comment.created.json",
			edits: []edit{body("Looks simple.\n/agent-fix keep it small\nand add a test")},
			want: decision{fix: &jobs.FixIssue{
				DeliveryID: d, Installation: 1, Repo: helloWorld, Number: 1, Trigger: issueComment,
				Requester: codertocat, Instructions: "keep it small\nand add a test",
			}},
		},
		{name: "no command", event: "issue_comment", file: "issue_comment.created.json", want: ignored("no /agent-fix command")},
		{name: "quoted command", event: "issue_comment", file: "issue_comment.created.json", edits: []edit{body("> /agent-fix\nnot now")}, want: ignored("no /agent-fix command")},
		{name: "edited comment", event: "issue_comment", file: "issue_comment.edited.json", edits: []edit{body("/agent-fix")}, want: ignored("action edited is not a trigger (only created)")},
		{name: "deleted comment", event: "issue_comment", file: "issue_comment.deleted.json", edits: []edit{body("/agent-fix")}, want: ignored("action deleted is not a trigger (only created)")},
		{name: "comment by a bot", event: "issue_comment", file: "issue_comment.created.json", edits: []edit{body("/agent-fix"), set("sender.type", "Bot")}, want: ignored("sender Codertocat is a bot")},
		{
			name: "stop on an issue", event: "issue_comment", file: "issue_comment.created.json", edits: []edit{body("/agent-fix stop")},
			want: decision{notice: &jobs.Notice{
				DeliveryID: d, Installation: 1, Repo: helloWorld, Number: 1, Trigger: issueComment, Requester: codertocat,
				Command: jobs.Command{Verb: jobs.VerbStop}, Outcome: jobs.OutcomeStop,
			}},
		},
		{
			name: "command on the bot's PR", event: "issue_comment", file: "issue_comment.created.json",
			edits: []edit{body("/agent-fix rename it"), asPR("Bot"), set("issue.user.login", "agentfix[bot]")},
			want: decision{revise: &jobs.RevisePR{
				DeliveryID: d, Installation: 1, Repo: helloWorld, Number: 1, Trigger: issueComment, Requester: codertocat,
				Instructions: "rename it", Author: bot,
			}},
		},
		{
			name: "command on a person's PR", event: "issue_comment", file: "issue_comment.created.json",
			edits: []edit{body("/agent-fix"), asPR("User")},
			want: decision{notice: &jobs.Notice{
				DeliveryID: d, Installation: 1, Repo: helloWorld, Number: 1, IsPR: true, Trigger: issueComment, Requester: codertocat,
				Author: &codertocat, Outcome: jobs.OutcomeNotBotsPR,
			}},
		},
		{
			name: "help on a person's PR", event: "issue_comment", file: "issue_comment.created.json",
			edits: []edit{body("/agent-fix help"), asPR("User")},
			want: decision{notice: &jobs.Notice{
				DeliveryID: d, Installation: 1, Repo: helloWorld, Number: 1, IsPR: true, Trigger: issueComment, Requester: codertocat,
				Command: jobs.Command{Verb: jobs.VerbHelp}, Author: &codertocat, Outcome: jobs.OutcomeHelp,
			}},
		},
		{
			name: "resume on the bot's PR", event: "issue_comment", file: "issue_comment.created.json",
			edits: []edit{body("/agent-fix resume"), asPR("Bot"), set("issue.user.login", "agentfix[bot]")},
			want: decision{notice: &jobs.Notice{
				DeliveryID: d, Installation: 1, Repo: helloWorld, Number: 1, IsPR: true, Trigger: issueComment, Requester: codertocat,
				Command: jobs.Command{Verb: jobs.VerbResume}, Author: &bot, Outcome: jobs.OutcomeResume,
			}},
		},
		{
			name: "review on the bot's PR", event: "pull_request_review", file: "pull_request_review.submitted.json",
			edits: []edit{set("review.body", "Close.\n/agent-fix address my comments"), set("pull_request.user.type", "Bot"), set("pull_request.user.login", "agentfix[bot]")},
			want: decision{revise: &jobs.RevisePR{
				DeliveryID: d, Installation: 1, Repo: helloWorld, Number: 2, Trigger: reviewTrigger, Requester: codertocat,
				Instructions: "address my comments", Author: bot,
			}},
		},
		{name: "review without body", event: "pull_request_review", file: "pull_request_review.submitted.json", want: ignored("no /agent-fix command")},
		{name: "review dismissed", event: "pull_request_review", file: "pull_request_review.submitted.json", edits: []edit{set("action", "dismissed"), set("review.body", "/agent-fix")}, want: ignored("action dismissed is not a trigger (only submitted)")},
		{
			name: "inline comment on the bot's PR", event: "pull_request_review_comment", file: "pull_request_review_comment.created.json",
			edits: []edit{body("/agent-fix use a map here"), set("pull_request.user.type", "Bot"), set("pull_request.user.login", "agentfix[bot]")},
			want: decision{revise: &jobs.RevisePR{
				DeliveryID: d, Installation: 1, Repo: helloWorld, Number: 2, Trigger: prTrigger, Requester: codertocat,
				Instructions: "use a map here", Author: bot,
			}},
		},
		{name: "inline comment edited", event: "pull_request_review_comment", file: "pull_request_review_comment.created.json", edits: []edit{set("action", "edited"), body("/agent-fix")}, want: ignored("action edited is not a trigger (only created)")},
		{
			name: "installation deleted", event: "installation", file: "installation.deleted.json",
			want: decision{cancel: &jobs.Cancel{DeliveryID: d, Installation: 2, Reason: jobs.CancelInstallationDeleted}},
		},
		{
			name: "installation suspended", event: "installation", file: "installation.suspend.json",
			want: decision{cancel: &jobs.Cancel{DeliveryID: d, Installation: 16598467, Reason: jobs.CancelInstallationSuspended}},
		},
		{name: "installation created", event: "installation", file: "installation.created.json", want: ignored("installation action created needs nothing")},
		{
			name: "repositories removed", event: "installation_repositories", file: "installation_repositories.removed.json",
			want: decision{cancel: &jobs.Cancel{DeliveryID: d, Installation: 2, Reason: jobs.CancelRepositoriesRemoved, Repos: []jobs.Repo{
				{ID: 1296269, Owner: "octocat", Name: "Hello-World", FullName: "octocat/Hello-World"},
			}}},
		},
		{name: "repositories added", event: "installation_repositories", file: "installation_repositories.added.json", want: ignored("installation_repositories action added needs nothing")},
		{name: "ping", event: "ping", file: "ping.json", want: ignored("pong (hook 109948940)")},
		{
			name: "check suite completed", event: "check_suite", file: "check_suite.completed.json",
			want: decision{checks: &jobs.ChecksDone{DeliveryID: d, Installation: testInstallation, Repo: helloWorld, HeadSHA: checkHead, PRs: []int{2}}},
		},
		{
			name: "check suite of two pull requests", event: "check_suite", file: "check_suite.completed.json",
			edits: []edit{set("check_suite.pull_requests", []any{map[string]any{"number": 2}, map[string]any{"number": 5}})},
			want:  decision{checks: &jobs.ChecksDone{DeliveryID: d, Installation: testInstallation, Repo: helloWorld, HeadSHA: checkHead, PRs: []int{2, 5}}},
		},
		{name: "check suite that passed", event: "check_suite", file: "check_suite.completed.json", edits: []edit{set("check_suite.conclusion", "success")},
			want: decision{checks: &jobs.ChecksDone{DeliveryID: d, Installation: testInstallation, Repo: helloWorld, HeadSHA: checkHead, PRs: []int{2}}}},
		{name: "check suite requested", event: "check_suite", file: "check_suite.completed.json", edits: []edit{set("action", "requested")}, want: ignored("check suite action requested needs nothing (only completed)")},
		{name: "check suite of this App", event: "check_suite", file: "check_suite.completed.json", edits: []edit{set("check_suite.app.id", 42)}, want: ignored("the check suite is this App's own")},
		{name: "check suite without pull requests", event: "check_suite", file: "check_suite.completed.json", edits: []edit{set("check_suite.pull_requests", []any{})}, want: ignored("the check suite is on no pull request of this repository")},
		{name: "check suite without installation", event: "check_suite", file: "check_suite.completed.json", edits: []edit{set("installation", nil)}, want: ignored("no installation in the payload (not a GitHub App delivery)")},
		{
			name: "check run failed", event: "check_run", file: "check_run.completed.json",
			want: decision{checks: &jobs.ChecksDone{DeliveryID: d, Installation: testInstallation, Repo: helloWorld, HeadSHA: checkHead, PRs: []int{2}}},
		},
		{
			name: "check run timed out", event: "check_run", file: "check_run.completed.json", edits: []edit{set("check_run.conclusion", "timed_out")},
			want: decision{checks: &jobs.ChecksDone{DeliveryID: d, Installation: testInstallation, Repo: helloWorld, HeadSHA: checkHead, PRs: []int{2}}},
		},
		{name: "check run passed", event: "check_run", file: "check_run.completed.json", edits: []edit{set("check_run.conclusion", "success")}, want: ignored("the check run did not fail; its check suite's completion reads the checks")},
		{name: "check run neutral", event: "check_run", file: "check_run.completed.json", edits: []edit{set("check_run.conclusion", "neutral")}, want: ignored("the check run did not fail; its check suite's completion reads the checks")},
		{name: "check run cancelled", event: "check_run", file: "check_run.completed.json", edits: []edit{set("check_run.conclusion", "cancelled")}, want: ignored("the check run did not fail; its check suite's completion reads the checks")},
		{name: "check run created", event: "check_run", file: "check_run.completed.json", edits: []edit{set("action", "created")}, want: ignored("check run action created needs nothing (only completed)")},
		{name: "check run of this App", event: "check_run", file: "check_run.completed.json", edits: []edit{set("check_run.app.id", 42)}, want: ignored("the check run is this App's own")},
		{
			name: "push to the default branch", event: "push", file: "push.json",
			want: decision{baseMoved: &jobs.BaseMoved{DeliveryID: d, Installation: testInstallation, Repo: helloWorld, Branch: "master", After: pushAfter}},
		},
		{name: "push to another branch", event: "push", file: "push.json", edits: []edit{set("ref", "refs/heads/agent-fix/issue-1")}, want: ignored("push to agent-fix/issue-1, not to the default branch master")},
		{name: "push of a tag", event: "push", file: "push.json", edits: []edit{set("ref", "refs/tags/v1")}, want: ignored("push to refs/tags/v1, not to a branch")},
		{name: "push deleting the branch", event: "push", file: "push.json", edits: []edit{set("deleted", true), set("after", "0000000000000000000000000000000000000000")}, want: ignored("the push deleted master")},
		{name: "push without installation", event: "push", file: "push.json", edits: []edit{set("installation", nil)}, want: ignored("no installation in the payload (not a GitHub App delivery)")},
	}
	hs := handlers(testRules)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := hs[tt.event].decide(delivery{id: d, event: tt.event}, payload(t, tt.file, tt.edits...))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(decision{})); diff != "" {
				t.Errorf("decide (-want +got):\n%s", diff)
			}
		})
	}
}
