package ghfake_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/agentfix/agentfix/ghapp/ghfake"
)

// TestEventPayloads: the payloads the fake makes decode as GitHub's do
// (go-github's event types) and say what its state holds: the suite's
// head, conclusion and pull requests, the push's branch and commits.
func TestEventPayloads(t *testing.T) {
	f := ghfake.New(t)
	f.NewRepo("octo/widget", map[string]string{"README.md": "# widget\n"})
	f.Install(5, "octo/widget")
	before, _ := f.Branch("octo/widget", "main")
	head := f.Commit("octo/widget", "agent-fix/issue-1", map[string]string{"a.go": "package a\n"}, "Fix")
	pr := f.AddPR("octo/widget", ghfake.PR{Title: "Fix #1", Head: "agent-fix/issue-1", Author: f.BotLogin()})
	job := f.AddJob("octo/widget", ghfake.Job{HeadSHA: head, Name: "test", Conclusion: "failure"})
	suite := f.CheckSuites("octo/widget")[0]

	parse := func(event string, m map[string]any) any {
		t.Helper()
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := github.ParseWebHook(event, b)
		if err != nil {
			t.Fatalf("parse %s: %v", event, err)
		}
		return ev
	}
	cs := parse("check_suite", f.CheckSuiteEvent("octo/widget", suite.ID)).(*github.CheckSuiteEvent)
	if s := cs.GetCheckSuite(); cs.GetAction() != "completed" || s.GetHeadSHA() != head || s.GetConclusion() != "failure" ||
		s.GetApp().GetSlug() != "github-actions" || len(s.PullRequests) != 1 || s.PullRequests[0].GetNumber() != pr ||
		cs.GetInstallation().GetID() != 5 || cs.GetRepo().GetFullName() != "octo/widget" || s.GetHeadBranch() != "agent-fix/issue-1" {
		t.Errorf("check_suite payload = %+v", cs)
	}
	cr := parse("check_run", f.CheckRunEvent("octo/widget", job)).(*github.CheckRunEvent)
	if r := cr.GetCheckRun(); r.GetID() != job || r.GetConclusion() != "failure" || len(r.PullRequests) != 1 || r.GetApp().GetID() != ghfake.Actions.ID {
		t.Errorf("check_run payload = %+v", cr)
	}
	f.Commit("octo/widget", "main", map[string]string{"b.txt": "b\n"}, "Move on")
	after, _ := f.Branch("octo/widget", "main")
	p := parse("push", f.PushEvent("octo/widget", "main", before)).(*github.PushEvent)
	if p.GetRef() != "refs/heads/main" || p.GetBefore() != before || p.GetAfter() != after || p.GetRepo().GetDefaultBranch() != "main" || p.GetInstallation().GetID() != 5 {
		t.Errorf("push payload = %+v", p)
	}
}
