package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"
)

func revise(delivery string) RevisePR {
	return RevisePR{
		DeliveryID: delivery, Installation: 7, Repo: testRepo(), Number: 9,
		Trigger: Trigger{Kind: TriggerIssueComment, CommentID: 5}, Requester: User{Login: "alice", ID: 2, Type: "User"},
		Author: User{Login: "agentfix[bot]", ID: 3, Type: "Bot"},
	}
}

func TestEnqueueRevise(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const id = "revise:octo/repo#9"

	t.Run("queued, ours again, then busy", func(t *testing.T) {
		e := newEnv(t)
		for _, c := range []struct {
			delivery string
			want     Outcome
		}{{"d1", OutcomeQueued}, {"d1", OutcomeQueued}, {"d2", OutcomeFollowUpKept}} {
			got, err := e.client.EnqueueRevise(ctx, revise(c.delivery))
			if err != nil || got != c.want {
				t.Fatalf("EnqueueRevise(%s) = %q, %v; want %q", c.delivery, got, err, c.want)
			}
		}
		if n := len(e.tasks(t, QueueInteractive)); n != 0 {
			t.Errorf("interactive tasks = %d, want none (no notice)", n)
		}
	})

	t.Run("after the round ended the follow-up takes the id", func(t *testing.T) {
		e := newEnv(t)
		e.runWorker(t, func(context.Context, *asynq.Task) error { return nil })
		if _, err := e.client.EnqueueRevise(ctx, revise("d1")); err != nil {
			t.Fatal(err)
		}
		e.waitState(t, id, asynq.TaskStateCompleted)
		p := revise(FollowUpDeliveryID("d1"))
		p.FollowUps = []KeptCommand{{DeliveryID: "d2", Requester: User{Login: "bob"}, Instructions: "also this"}}
		got, err := e.client.EnqueueRevise(ctx, p)
		if err != nil || got != OutcomeQueued {
			t.Fatalf("EnqueueRevise(follow-up) = %q, %v; want queued", got, err)
		}
		e.waitState(t, id, asynq.TaskStateCompleted)
		info, err := e.inspector.GetTaskInfo(QueueAgent, id)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode[RevisePR](info.Payload)
		if err != nil {
			t.Fatal(err)
		}
		p.V = Version
		if diff := cmp.Diff(p, back); diff != "" {
			t.Errorf("follow-up payload (-want +got):\n%s", diff)
		}
	})
}

func TestSubmitFollowUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	f := FollowUp{DeliveryID: "d1", Installation: 7, Repo: testRepo(), Number: 9, After: "d1"}
	if err := e.client.SubmitFollowUp(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := e.client.SubmitFollowUp(ctx, f); !errors.Is(err, ErrDuplicate) {
		t.Errorf("second SubmitFollowUp: err = %v, want ErrDuplicate", err)
	}
	info, err := e.inspector.GetTaskInfo(QueueInteractive, "followup:d1")
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != TypeFollowUp || info.Timeout != 2*time.Minute {
		t.Errorf("follow-up task type %q timeout %s, want %q 2m", info.Type, info.Timeout, TypeFollowUp)
	}
	if _, err := NewFollowUpTask(FollowUp{DeliveryID: "d", Installation: 7, Repo: testRepo()}); err == nil ||
		err.Error() != "follow-up task: issue or PR number must be positive, got 0" {
		t.Errorf("follow-up task without a number: err = %v", err)
	}
}
