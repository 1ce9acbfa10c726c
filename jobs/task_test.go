package jobs

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTaskIDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"fix", FixTaskID("Octo-Org/Hello-World", 7), "fix:octo-org/hello-world#7"},
		{"revise", ReviseTaskID("octo/repo", 12), "revise:octo/repo#12"},
		{"notice", NoticeTaskID("72d3162e-cc78-11e3-81ab-4c9367dc0958"), "notice:72d3162e-cc78-11e3-81ab-4c9367dc0958"},
		{"cancel", CancelTaskID("d1"), "cancel:d1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("task id = %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func testRepo() Repo {
	return Repo{ID: 1296269, Owner: "octo", Name: "repo", FullName: "octo/repo", CloneURL: "https://github.com/octo/repo.git", DefaultBranch: "main"}
}

func TestConstructorErrors(t *testing.T) {
	t.Parallel()
	ok := FixIssue{DeliveryID: "d", Installation: 1, Repo: testRepo(), Number: 1}
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"no delivery", func() error { p := ok; p.DeliveryID = ""; _, err := NewFixTask(p, time.Hour); return err }, "fix task: delivery id is required"},
		{"no installation", func() error { p := ok; p.Installation = 0; _, err := NewFixTask(p, time.Hour); return err }, "fix task: installation is required"},
		{"no repo", func() error { p := ok; p.Repo.FullName = "repo"; _, err := NewFixTask(p, time.Hour); return err }, `fix task: repository full name owner/repo is required, got "repo"`},
		{"no number", func() error { p := ok; p.Number = 0; _, err := NewFixTask(p, time.Hour); return err }, "fix task: issue or PR number must be positive, got 0"},
		{"no duration", func() error { _, err := NewFixTask(ok, 0); return err }, "fix task fix:octo/repo#1: max duration must be positive, got 0s"},
		{"revise", func() error { _, err := NewReviseTask(RevisePR{Installation: 1}, time.Hour); return err }, "revise task: delivery id is required"},
		{"notice without outcome", func() error {
			_, err := NewNoticeTask(Notice{DeliveryID: "d", Installation: 1, Repo: testRepo(), Number: 1})
			return err
		}, "notice task: outcome is required"},
		{"cancel without reason", func() error { _, err := NewCancelTask(Cancel{DeliveryID: "d", Installation: 1}); return err }, "cancel task: delivery id, installation and reason are required"},
		{"cancel issue without repo", func() error {
			_, err := NewCancelTask(Cancel{DeliveryID: "d", Installation: 1, Reason: CancelIssueClosed, Number: 3})
			return err
		}, "cancel task: an issue number needs exactly one repository, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	want := FixIssue{
		V: Version, DeliveryID: "d1", Installation: 5, Repo: testRepo(), Number: 3,
		Trigger:   Trigger{Kind: TriggerIssueComment, CommentID: 99, URL: "https://github.com/octo/repo/issues/3#issuecomment-99"},
		Requester: User{Login: "alice", ID: 2, Type: "User"}, Instructions: "use the stdlib",
	}
	task, err := NewFixTask(want, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode[FixIssue](task.Payload())
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Decode(NewFixTask(p)) (-want +got):\n%s", diff)
	}

	bad := []struct {
		name    string
		payload string
		want    string
	}{
		{"newer version", `{"v":2,"delivery_id":"d","installation":1}`, "version 2, this build reads version 1"},
		{"no version", `{"delivery_id":"d","installation":1}`, "version 0, this build reads version 1"},
		{"no delivery", `{"v":1,"installation":1}`, "delivery_id and installation are required"},
		{"not json", `{"v":1,`, "unexpected end of JSON input"},
		{"wrong type", `{"v":1,"delivery_id":"d","installation":1,"number":"7"}`, "cannot unmarshal string"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode[Notice]([]byte(tt.payload))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "jobs.Notice") {
				t.Errorf("Decode(%s) error = %v, want one naming jobs.Notice and containing %q", tt.payload, err, tt.want)
			}
		})
	}
}
