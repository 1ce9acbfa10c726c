package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/jobs"
)

// Follow-up rounds (DESIGN.md §4). A command on a pull request whose
// revise task is queued or running is kept in a Redis list,
// agentfix:followup:<task id>; when the round ends for good, the kept
// commands start one follow-up round that answers them all.
//
// The ending round still holds the revise task id while its handler runs,
// so it cannot enqueue the next round itself: it enqueues a follow-up task
// on the interactive queue, which waits until asynq has finished the round,
// then enqueues the follow-up round — under the revise task id again, so
// one round per pull request at a time still holds — with the delivery id
// jobs.FollowUpDeliveryID of the ended round's, and removes the commands it
// took from the list.
//
// A command kept just as the round ends must not be stranded. The round,
// as it ends, sets agentfix:roundend:<task id> to its delivery and then
// counts the list; the notice that keeps a command pushes it and then reads
// that marker, in one transaction. Either the round's count sees the
// command, or the notice sees the marker and enqueues a follow-up task
// itself. A new round clears the marker as it starts.
// MaxKept bounds the commands one follow-up round answers; more wait for
// the round after it.
const MaxKept = 20

// Keep appends c to the commands kept for task id and returns the delivery
// of the round that ended meanwhile, "" while one is queued or running.
func (s *Store) Keep(ctx context.Context, taskID string, c jobs.KeptCommand) (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("keep command for %s: %w", taskID, err)
	}
	k := followupPrefix + taskID
	var ended *redis.StringCmd
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.RPush(ctx, k, b)
		p.Expire(ctx, k, followupTTL)
		ended = p.Get(ctx, roundEndPrefix+taskID)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("keep command for %s: %w", taskID, err)
	}
	v, err := ended.Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}

// RoundStarted clears the round-end marker of task id: from now on the
// running round takes the commands kept.
func (s *Store) RoundStarted(ctx context.Context, taskID string) error {
	if err := s.rdb.Del(ctx, roundEndPrefix+taskID).Err(); err != nil {
		return fmt.Errorf("start round of %s: %w", taskID, err)
	}
	return nil
}

// RoundEnded sets the round-end marker of task id to deliveryID and
// returns how many commands are kept.
func (s *Store) RoundEnded(ctx context.Context, taskID, deliveryID string) (int64, error) {
	var n *redis.IntCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, roundEndPrefix+taskID, deliveryID, followupTTL)
		n = p.LLen(ctx, followupPrefix+taskID)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("end round of %s: %w", taskID, err)
	}
	return n.Val(), nil
}

// KeptCommands returns the first MaxKept commands kept for task id.
func (s *Store) KeptCommands(ctx context.Context, taskID string) ([]jobs.KeptCommand, error) {
	raw, err := s.rdb.LRange(ctx, followupPrefix+taskID, 0, MaxKept-1).Result()
	if err != nil {
		return nil, fmt.Errorf("kept commands of %s: %w", taskID, err)
	}
	return decodeKept(taskID, raw)
}

// TakeKept removes from the head of task id's kept commands those of
// answered (a follow-up round answers them), matched in order by delivery,
// so a retry that finds them removed already removes nothing; commands
// kept since stay. Only follow-up tasks remove from the head and notices
// append at the tail, so the two steps need no transaction.
func (s *Store) TakeKept(ctx context.Context, taskID string, answered []jobs.KeptCommand) error {
	head, err := s.KeptCommands(ctx, taskID)
	if err != nil {
		return err
	}
	n := 0
	for n < len(head) && n < len(answered) && head[n].DeliveryID == answered[n].DeliveryID {
		n++
	}
	if err := s.rdb.LTrim(ctx, followupPrefix+taskID, int64(n), -1).Err(); err != nil {
		return fmt.Errorf("take kept commands of %s: %w", taskID, err)
	}
	return nil
}

// DropKept removes and returns every command kept for task id.
func (s *Store) DropKept(ctx context.Context, taskID string) ([]jobs.KeptCommand, error) {
	var all *redis.StringSliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		all = p.LRange(ctx, followupPrefix+taskID, 0, -1)
		p.Del(ctx, followupPrefix+taskID)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("drop kept commands of %s: %w", taskID, err)
	}
	return decodeKept(taskID, all.Val())
}

func decodeKept(taskID string, raw []string) ([]jobs.KeptCommand, error) {
	out := make([]jobs.KeptCommand, 0, len(raw))
	for _, r := range raw {
		var c jobs.KeptCommand
		if err := json.Unmarshal([]byte(r), &c); err != nil {
			return nil, fmt.Errorf("kept command of %s: %w", taskID, err)
		}
		out = append(out, c)
	}
	return out, nil
}
