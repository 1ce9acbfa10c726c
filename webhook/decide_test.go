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
