package ghapp_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/ghapp/ghfake"
)

func TestListReviews(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.f.Commit(widgetName, "agent-fix/issue-3", map[string]string{"a.go": "package a\n"}, "Fix")
	pr := e.f.AddPR(widgetName, ghfake.PR{Title: "Fix #3", Head: "agent-fix/issue-3", Author: e.f.BotLogin()})
	r1, _ := e.f.AddReview(widgetName, pr, "alice", "Looks close.\n/agent-fix rename it",
		ghfake.ReviewComment{Body: "here", Path: "a.go", Line: 1})
	r2, _ := e.f.AddReview(widgetName, pr, "bob", "")

	got, err := e.client.ListReviews(ctx, widget, pr)
	if err != nil {
		t.Fatalf("ListReviews: %v", err)
	}
	want := []ghapp.Review{
		{ID: r1, Author: "alice", Body: "Looks close.\n/agent-fix rename it", State: "COMMENTED"},
		{ID: r2, Author: "bob", State: "COMMENTED"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListReviews (-want +got):\n%s", diff)
	}
	if _, err := e.client.ListReviews(ctx, widget, 999); err == nil {
		t.Errorf("ListReviews of a missing pull request: no error")
	}
}
