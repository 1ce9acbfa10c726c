package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	headSHA = "0123456789abcdef0123456789abcdef01234567"
	baseSHA = "89abcdef0123456789abcdef0123456789abcdef"
)

func fixChecks(delivery string) FixChecks {
	return FixChecks{DeliveryID: delivery, Installation: 7, Repo: testRepo(), Number: 9, Head: headSHA,
		Author: User{Login: "agentfix[bot]", Type: "Bot"}, Requester: User{Login: "agentfix[bot]", Type: "Bot"}}
}

func TestCITaskIDs(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, got, want string }{
		{"checks", ChecksTaskID("d1"), "checks:d1"},
		{"basemoved", BaseMovedTaskID("d2"), "basemoved:d2"},
		{"ci delivery", CIDeliveryID(headSHA), "ci-" + headSHA},
		{"conflict delivery", ConflictDeliveryID(headSHA, baseSHA), "conflict-" + headSHA + "-" + baseSHA},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestCITaskConstructorErrors(t *testing.T) {
	t.Parallel()
	checks := ChecksDone{DeliveryID: "d", Installation: 1, Repo: testRepo(), HeadSHA: headSHA, PRs: []int{2}}
	moved := BaseMoved{DeliveryID: "d", Installation: 1, Repo: testRepo(), Branch: "main", After: baseSHA}
	conflict := ResolveConflict{DeliveryID: "d", Installation: 1, Repo: testRepo(), Number: 2, Head: headSHA, Base: "main", BaseHead: baseSHA}
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"checks without pull request", func() error { p := checks; p.PRs = nil; _, err := NewChecksTask(p); return err }, "checks task: no pull request"},
		{"checks with a bad number", func() error { p := checks; p.PRs = []int{3, 0}; _, err := NewChecksTask(p); return err }, "checks task: pull request number 0 is not positive"},
		{"checks with a short head", func() error { p := checks; p.HeadSHA = "abc"; _, err := NewChecksTask(p); return err }, `checks task: head "abc" is not a full commit id`},
		{"checks without repo", func() error { p := checks; p.Repo.FullName = ""; _, err := NewChecksTask(p); return err }, `checks task: repository full name owner/repo is required, got ""`},
		{"basemoved without branch", func() error { p := moved; p.Branch = ""; _, err := NewBaseMovedTask(p); return err }, `basemoved task: branch "" and commit "` + baseSHA + `" are required`},
		{"ci without head", func() error { p := fixChecks("d"); p.Head = ""; _, err := NewCITask(p, time.Hour); return err }, `ci task: head "" is not a full commit id`},
		{"ci without number", func() error { p := fixChecks("d"); p.Number = 0; _, err := NewCITask(p, time.Hour); return err }, "ci task: issue or PR number must be positive, got 0"},
		{"conflict without base", func() error { p := conflict; p.Base = ""; _, err := NewConflictTask(p, time.Hour); return err }, `conflict task: head "` + headSHA + `", base "" and base head "` + baseSHA + `" are required`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
	for _, ok := range []func() error{
		func() error { _, err := NewChecksTask(checks); return err },
		func() error { _, err := NewBaseMovedTask(moved); return err },
		func() error { _, err := NewConflictTask(conflict, time.Hour); return err },
	} {
		if err := ok(); err != nil {
			t.Errorf("a valid payload: %v", err)
		}
	}
}

// TestAutomaticRoundsHoldTheReviseTaskID: a ci or conflict round takes the
// pull request's revise task id, so it never runs next to another round of
// the same pull request, and the same round enqueued again (another
// delivery reporting the same head) is recognised as the one queued.
func TestAutomaticRoundsHoldTheReviseTaskID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	got, err := e.client.EnqueueCI(ctx, fixChecks(CIDeliveryID(headSHA)))
	if err != nil || got != OutcomeQueued {
		t.Fatalf("EnqueueCI = %q, %v; want queued", got, err)
	}
	info, err := e.inspector.GetTaskInfo(QueueAgent, ReviseTaskID("octo/repo", 9))
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != TypeCI || info.MaxRetry != AgentMaxRetry || info.Retention != AgentRetention {
		t.Errorf("ci task: type %s, max retry %d, retention %s; want ci, %d, %s", info.Type, info.MaxRetry, info.Retention, AgentMaxRetry, AgentRetention)
	}
	if p, err := Decode[FixChecks](info.Payload); err != nil || p.Head != headSHA || p.V != Version {
		t.Errorf("ci payload = %+v, %v", p, err)
	}
	// The same head again: the round queued is this one.
	if got, err := e.client.EnqueueCI(ctx, fixChecks(CIDeliveryID(headSHA))); err != nil || got != OutcomeQueued {
		t.Errorf("EnqueueCI of the same head = %q, %v; want queued (ours)", got, err)
	}
	// A revise round or a conflict round meanwhile finds the pull request busy.
	if got, err := e.client.EnqueueRevise(ctx, revise("r1")); err != nil || got != OutcomeFollowUpKept {
		t.Errorf("EnqueueRevise while the ci round waits = %q, %v; want follow_up_kept", got, err)
	}
	conflict := ResolveConflict{DeliveryID: ConflictDeliveryID(headSHA, baseSHA), Installation: 7, Repo: testRepo(), Number: 9,
		Head: headSHA, Base: "main", BaseHead: baseSHA}
	if got, err := e.client.EnqueueConflict(ctx, conflict); err != nil || got != OutcomeFollowUpKept {
		t.Errorf("EnqueueConflict while the ci round waits = %q, %v; want follow_up_kept", got, err)
	}
	if ids := e.tasks(t, QueueAgent); len(ids) != 1 {
		t.Errorf("agent tasks = %d, want 1", len(ids))
	}
}

func TestSubmitChecksAndBaseMoved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	checks := ChecksDone{DeliveryID: "c1", Installation: 7, Repo: testRepo(), HeadSHA: headSHA, PRs: []int{9, 10}}
	moved := BaseMoved{DeliveryID: "p1", Installation: 7, Repo: testRepo(), Branch: "main", After: baseSHA}
	for i := range 2 {
		var want error
		if i == 1 {
			want = ErrDuplicate
		}
		if err := e.client.SubmitChecks(ctx, checks); !errors.Is(err, want) {
			t.Errorf("SubmitChecks #%d: err = %v, want %v", i+1, err, want)
		}
		if err := e.client.SubmitBaseMoved(ctx, moved); !errors.Is(err, want) {
			t.Errorf("SubmitBaseMoved #%d: err = %v, want %v", i+1, err, want)
		}
	}
	info, err := e.inspector.GetTaskInfo(QueueInteractive, "checks:c1")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Decode[ChecksDone](info.Payload)
	checks.V = Version
	if err != nil || !cmp.Equal(p, checks) {
		t.Errorf("checks payload = %+v, %v; want %+v", p, err, checks)
	}
	if !strings.HasPrefix(info.Type, TypeChecks) || info.Queue != QueueInteractive {
		t.Errorf("checks task type %s queue %s", info.Type, info.Queue)
	}
}
