package webhook

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfix/agentfix/jobs"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-github/v66/github"
)

// fields is what routing reads of one payload, flattened for comparison.
type fields map[string]any

// TestPayloadTypesMatchGoGitHub decodes every real payload in testdata/
// twice — into the edge's small types and into go-github's complete ones —
// and checks that every field routing reads comes out the same, so a wrong
// JSON name in the small types cannot go unnoticed.
func TestPayloadTypesMatchGoGitHub(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no payloads in testdata: %v", err)
	}
	variants := map[string][]edit{
		"as is":        nil,
		"pull request": {asPR("Bot")},
		"no install":   {set("installation", nil)},
		"bot sender":   {set("sender.type", "Bot")},
	}
	covered := map[string]bool{}
	for _, file := range files {
		name := filepath.Base(file)
		event, _, _ := strings.Cut(name, ".")
		for vname, edits := range variants {
			if vname == "pull request" && event != "issue_comment" {
				continue
			}
			if vname == "bot sender" && event == "ping" {
				continue
			}
			t.Run(name+"/"+vname, func(t *testing.T) {
				body := payload(t, name, edits...)
				parsed, err := github.ParseWebHook(event, body)
				if err != nil {
					t.Fatalf("go-github: %v", err)
				}
				want, got := goGitHubFields(t, parsed), smallFields(t, event, body)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("fields of %s (-go-github +small types):\n%s", name, diff)
				}
				covered[event] = true
			})
		}
	}
	for event := range handlers(testRules) {
		if github.EventForType(event) == nil {
			t.Errorf("handled event %q is not an event go-github knows", event)
		}
		if !covered[event] {
			t.Errorf("no payload of handled event %q in testdata", event)
		}
	}
}

func goGitHubFields(t *testing.T, ev any) fields {
	repo := func(r *github.Repository) jobs.Repo {
		return jobs.Repo{
			ID: r.GetID(), Owner: r.GetOwner().GetLogin(), Name: r.GetName(), FullName: r.GetFullName(),
			CloneURL: r.GetCloneURL(), DefaultBranch: r.GetDefaultBranch(), Private: r.GetPrivate(),
		}
	}
	usr := func(u *github.User) jobs.User {
		return jobs.User{Login: u.GetLogin(), ID: u.GetID(), Type: u.GetType()}
	}
	switch ev := ev.(type) {
	case *github.IssuesEvent:
		return fields{
			"action": ev.GetAction(), "installation": ev.GetInstallation().GetID(), "repo": repo(ev.GetRepo()),
			"sender": usr(ev.GetSender()), "number": ev.GetIssue().GetNumber(), "state": ev.GetIssue().GetState(),
			"url": ev.GetIssue().GetHTMLURL(), "label": ev.GetLabel().GetName(),
		}
	case *github.IssueCommentEvent:
		return fields{
			"action": ev.GetAction(), "installation": ev.GetInstallation().GetID(), "repo": repo(ev.GetRepo()),
			"sender": usr(ev.GetSender()), "number": ev.GetIssue().GetNumber(), "author": usr(ev.GetIssue().GetUser()),
			"isPR": ev.GetIssue().IsPullRequest(), "id": ev.GetComment().GetID(), "body": ev.GetComment().GetBody(),
			"url": ev.GetComment().GetHTMLURL(),
		}
	case *github.PullRequestReviewEvent:
		return fields{
			"action": ev.GetAction(), "installation": ev.GetInstallation().GetID(), "repo": repo(ev.GetRepo()),
			"sender": usr(ev.GetSender()), "number": ev.GetPullRequest().GetNumber(), "author": usr(ev.GetPullRequest().GetUser()),
			"id": ev.GetReview().GetID(), "body": ev.GetReview().GetBody(), "url": ev.GetReview().GetHTMLURL(),
		}
	case *github.PullRequestReviewCommentEvent:
		return fields{
			"action": ev.GetAction(), "installation": ev.GetInstallation().GetID(), "repo": repo(ev.GetRepo()),
			"sender": usr(ev.GetSender()), "number": ev.GetPullRequest().GetNumber(), "author": usr(ev.GetPullRequest().GetUser()),
			"id": ev.GetComment().GetID(), "body": ev.GetComment().GetBody(), "url": ev.GetComment().GetHTMLURL(),
			"review": ev.GetComment().GetPullRequestReviewID(),
		}
	case *github.InstallationEvent:
		return fields{"action": ev.GetAction(), "installation": ev.GetInstallation().GetID()}
	case *github.InstallationRepositoriesEvent:
		var removed []jobs.Repo
		for _, r := range ev.RepositoriesRemoved {
			removed = append(removed, repo(r))
		}
		return fields{"action": ev.GetAction(), "installation": ev.GetInstallation().GetID(), "removed": removed}
	case *github.PingEvent:
		return fields{"hook": ev.GetHookID()}
	case *github.CheckSuiteEvent:
		cs := ev.GetCheckSuite()
		return fields{"action": ev.GetAction(), "installation": ev.GetInstallation().GetID(), "repo": repo(ev.GetRepo()),
			"sender": usr(ev.GetSender()), "head": cs.GetHeadSHA(), "app": cs.GetApp().GetID(), "slug": cs.GetApp().GetSlug(), "prs": prNumbers(cs.PullRequests)}
	case *github.CheckRunEvent:
		cr := ev.GetCheckRun()
		return fields{"action": ev.GetAction(), "installation": ev.GetInstallation().GetID(), "repo": repo(ev.GetRepo()),
			"sender": usr(ev.GetSender()), "head": cr.GetHeadSHA(), "app": cr.GetApp().GetID(), "slug": cr.GetApp().GetSlug(),
			"conclusion": cr.GetConclusion(), "prs": prNumbers(cr.PullRequests)}
	case *github.PushEvent:
		r := ev.GetRepo()
		return fields{"ref": ev.GetRef(), "after": ev.GetAfter(), "deleted": ev.GetDeleted(), "installation": ev.GetInstallation().GetID(),
			"repo": jobs.Repo{ID: r.GetID(), Owner: r.GetOwner().GetLogin(), Name: r.GetName(), FullName: r.GetFullName(),
				CloneURL: r.GetCloneURL(), DefaultBranch: r.GetDefaultBranch(), Private: r.GetPrivate()}}
	}
	t.Fatalf("no field list for %T", ev)
	return nil
}

func smallFields(t *testing.T, event string, body []byte) fields {
	t.Helper()
	decode := func(v any) {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("small types: %v", err)
		}
	}
	common := func(e envelope) fields {
		return fields{"action": e.Action, "installation": e.Installation.ID, "repo": toRepo(e.Repository), "sender": toUser(e.Sender)}
	}
	switch event {
	case "issues":
		var ev issuesEvent
		decode(&ev)
		f := common(ev.envelope)
		f["number"], f["state"], f["url"], f["label"] = ev.Issue.Number, ev.Issue.State, ev.Issue.HTMLURL, ev.Label.Name
		return f
	case "issue_comment":
		var ev issueCommentEvent
		decode(&ev)
		f := common(ev.envelope)
		f["number"], f["author"], f["isPR"] = ev.Issue.Number, toUser(ev.Issue.User), ev.Issue.PullRequest != nil
		f["id"], f["body"], f["url"] = ev.Comment.ID, ev.Comment.Body, ev.Comment.HTMLURL
		return f
	case "pull_request_review":
		var ev pullRequestReviewEvent
		decode(&ev)
		f := common(ev.envelope)
		f["number"], f["author"] = ev.PullRequest.Number, toUser(ev.PullRequest.User)
		f["id"], f["body"], f["url"] = ev.Review.ID, ev.Review.Body, ev.Review.HTMLURL
		return f
	case "pull_request_review_comment":
		var ev pullRequestReviewCommentEvent
		decode(&ev)
		f := common(ev.envelope)
		f["number"], f["author"] = ev.PullRequest.Number, toUser(ev.PullRequest.User)
		f["id"], f["body"], f["url"], f["review"] = ev.Comment.ID, ev.Comment.Body, ev.Comment.HTMLURL, ev.Comment.PullRequestReviewID
		return f
	case "installation":
		var ev installationEvent
		decode(&ev)
		return fields{"action": ev.Action, "installation": ev.Installation.ID}
	case "installation_repositories":
		var ev installationRepositoriesEvent
		decode(&ev)
		var removed []jobs.Repo
		for _, r := range ev.RepositoriesRemoved {
			removed = append(removed, toRepo(r))
		}
		return fields{"action": ev.Action, "installation": ev.Installation.ID, "removed": removed}
	case "ping":
		var ev pingEvent
		decode(&ev)
		return fields{"hook": ev.HookID}
	case "check_suite":
		var ev checkSuiteEvent
		decode(&ev)
		f := common(ev.envelope)
		cs := ev.CheckSuite
		f["head"], f["app"], f["slug"], f["prs"] = cs.HeadSHA, cs.App.ID, cs.App.Slug, checkedNumbers(cs.PullRequests)
		return f
	case "check_run":
		var ev checkRunEvent
		decode(&ev)
		f := common(ev.envelope)
		cr := ev.CheckRun
		f["head"], f["app"], f["slug"], f["conclusion"], f["prs"] = cr.HeadSHA, cr.App.ID, cr.App.Slug, cr.Conclusion, checkedNumbers(cr.PullRequests)
		return f
	case "push":
		var ev pushEvent
		decode(&ev)
		return fields{"ref": ev.Ref, "after": ev.After, "deleted": ev.Deleted, "installation": ev.Installation.ID, "repo": toRepo(ev.Repository)}
	}
	t.Fatalf("no small type for event %s", event)
	return nil
}

func prNumbers(prs []*github.PullRequest) []int {
	out := []int{}
	for _, p := range prs {
		out = append(out, p.GetNumber())
	}
	return out
}

func checkedNumbers(prs []checkedPR) []int {
	out := []int{}
	for _, p := range prs {
		out = append(out, p.Number)
	}
	return out
}

// TestPayloadTypeErrors checks that a value of the wrong type in a field
// routing reads is refused, as go-github refuses it.
func TestPayloadTypeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, event, file string
		edit              edit
	}{
		{"issue number", "issues", "issues.labeled.json", set("issue.number", "one")},
		{"comment body", "issue_comment", "issue_comment.created.json", set("comment.body", 7)},
		{"installation id", "installation", "installation.deleted.json", set("installation.id", "2")},
		{"pull request marker", "issue_comment", "issue_comment.created.json", set("issue.pull_request", "yes")},
		{"review id", "pull_request_review", "pull_request_review.submitted.json", set("review.id", true)},
		{"removed repositories", "installation_repositories", "installation_repositories.removed.json", set("repositories_removed", "all")},
		{"hook id", "ping", "ping.json", set("hook_id", "x")},
		{"check suite head", "check_suite", "check_suite.completed.json", set("check_suite.head_sha", 7)},
		{"check suite pull requests", "check_suite", "check_suite.completed.json", set("check_suite.pull_requests", "2")},
		{"check run conclusion", "check_run", "check_run.completed.json", set("check_run.conclusion", false)},
		{"check run app id", "check_run", "check_run.completed.json", set("check_run.app.id", "15368")},
		{"push ref", "push", "push.json", set("ref", 1)},
		{"push deleted", "push", "push.json", set("deleted", "no")},
	}
	hs := handlers(testRules)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := payload(t, tt.file, tt.edit)
			if _, err := github.ParseWebHook(tt.event, body); err == nil {
				t.Fatalf("go-github accepts the payload; the case tests nothing")
			}
			if got, err := hs[tt.event].decide(delivery{id: "d", event: tt.event}, body); err == nil {
				t.Errorf("decide = %+v, nil; want an error", got)
			}
		})
	}
}
