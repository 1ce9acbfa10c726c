package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/agent"
)

// Redis keys of the worker. A job is one trigger's run of an agent task:
// its key is the task id and the delivery id, so a retry (same payload)
// finds the job's status comment and saved result, while a new trigger
// after the job ended (same task id, new delivery) starts a new job.
const (
	jobLockPrefix  = "agentfix:joblock:"
	statusPrefix   = "agentfix:status:"
	resultPrefix   = "agentfix:result:"
	cancelPrefix   = "agentfix:cancel:"
	refusedPrefix  = "agentfix:refused:"
	helpPrefix     = "agentfix:help:"
	followupPrefix = "agentfix:followup:"
)

// TTLs of the worker's keys.
const (
	jobLockTTL    = time.Minute
	statusTTL     = 7 * 24 * time.Hour
	statusPending = 2 * time.Minute
	resultTTL     = 24 * time.Hour
	cancelTTL     = 24 * time.Hour
	refusedTTL    = 30 * 24 * time.Hour
	helpTTL       = 10 * time.Minute
	followupTTL   = 24 * time.Hour
)

// jobKey identifies a job: its agent task and the delivery that started it.
func jobKey(taskID, deliveryID string) string { return taskID + ":" + deliveryID }

// state is the worker's shared state in Redis.
type state struct {
	rdb  redis.UniversalClient
	poll time.Duration // wait between attempts on a taken key
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// Scripts that act only while the caller still owns the lock.
var (
	refreshLock = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) end return 0`)
	releaseLock = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)
)

// lockJob makes sure one handler at a time works on job key (a retry that
// asynq started while the previous attempt still reports its end waits). It
// returns the function that releases the lock; a lock whose owner died
// expires after jobLockTTL.
func (s state) lockJob(ctx context.Context, key string) (func(), error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	k := jobLockPrefix + key
	for {
		ok, err := s.rdb.SetNX(ctx, k, token, jobLockTTL).Result()
		if err != nil {
			return nil, fmt.Errorf("lock job %s: %w", key, err)
		}
		if ok {
			break
		}
		if err := sleep(ctx, s.poll); err != nil {
			return nil, fmt.Errorf("lock job %s: %w", key, err)
		}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(jobLockTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_ = refreshLock.Run(rctx, s.rdb, []string{k}, token, jobLockTTL.Milliseconds()).Err()
				cancel()
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = releaseLock.Run(rctx, s.rdb, []string{k}, token).Err()
	}, nil
}

// commentRef is a comment the worker made and finds again.
type commentRef struct {
	ID  int64
	URL string
}

func (c commentRef) encode() string { return strconv.FormatInt(c.ID, 10) + " " + c.URL }

func decodeCommentRef(s string) (commentRef, bool) {
	id, url, ok := strings.Cut(s, " ")
	n, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil || n <= 0 {
		return commentRef{}, false
	}
	return commentRef{ID: n, URL: url}, true
}

// statusComment returns job key's status comment, creating it with create
// when nobody has: the notice task and the job may race on it, so creation
// is claimed in Redis (SET NX) and the loser waits for the winner's id.
// create must itself find a comment an earlier, crashed attempt made.
func (s state) statusComment(ctx context.Context, key string, create func(context.Context) (commentRef, error)) (commentRef, error) {
	k := statusPrefix + key
	for {
		v, err := s.rdb.Get(ctx, k).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return commentRef{}, fmt.Errorf("status comment of %s: %w", key, err)
		}
		if ref, ok := decodeCommentRef(v); ok {
			return ref, nil
		}
		if err == nil { // "pending": another task is creating it
			if err := sleep(ctx, s.poll); err != nil {
				return commentRef{}, fmt.Errorf("status comment of %s: %w", key, err)
			}
			continue
		}
		won, err := s.rdb.SetNX(ctx, k, "pending", statusPending).Result()
		if err != nil {
			return commentRef{}, fmt.Errorf("status comment of %s: %w", key, err)
		}
		if !won {
			continue
		}
		ref, err := create(ctx)
		if err != nil {
			s.rdb.Del(context.WithoutCancel(ctx), k)
			return commentRef{}, err
		}
		if err := s.rdb.Set(ctx, k, ref.encode(), statusTTL).Err(); err != nil {
			return commentRef{}, fmt.Errorf("status comment of %s: %w", key, err)
		}
		return ref, nil
	}
}

// knownStatusComment returns job key's status comment if one was made.
func (s state) knownStatusComment(ctx context.Context, key string) (commentRef, bool, error) {
	v, err := s.rdb.Get(ctx, statusPrefix+key).Result()
	if errors.Is(err, redis.Nil) {
		return commentRef{}, false, nil
	}
	if err != nil {
		return commentRef{}, false, fmt.Errorf("status comment of %s: %w", key, err)
	}
	ref, ok := decodeCommentRef(v)
	return ref, ok, nil
}

// savedResult is what the agent produced, kept in Redis before anything is
// published, so a retry after a GitHub failure publishes it again instead
// of running the agent again.
type savedResult struct {
	RunID  string         `json:"run_id"`
	Base   string         `json:"base"`
	Result agent.Result   `json:"result"`
	Model  string         `json:"model"`
	Review reviewProgress `json:"review"`
	PR     int            `json:"pr,omitempty"` // the open bot PR the job continued, if any
	// Ready is set once a round that completed its pull request marked it
	// ready for review (job.markReady), so a retry does not ask again.
	Ready bool             `json:"ready,omitempty"`
	Done  *publishedResult `json:"done,omitempty"`
}

// publishedResult marks a job whose outcome was fully reported.
type publishedResult struct {
	Outcome string `json:"outcome"`
	PR      int    `json:"pr,omitempty"`
	PRURL   string `json:"pr_url,omitempty"`
}

func (s state) saveResult(ctx context.Context, key string, r savedResult) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("save result of %s: %w", key, err)
	}
	if err := s.rdb.Set(ctx, resultPrefix+key, b, resultTTL).Err(); err != nil {
		return fmt.Errorf("save result of %s: %w", key, err)
	}
	return nil
}

func (s state) loadResult(ctx context.Context, key string) (savedResult, bool, error) {
	b, err := s.rdb.Get(ctx, resultPrefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return savedResult{}, false, nil
	}
	if err != nil {
		return savedResult{}, false, fmt.Errorf("load result of %s: %w", key, err)
	}
	var r savedResult
	if err := json.Unmarshal(b, &r); err != nil {
		return savedResult{}, false, fmt.Errorf("load result of %s: %w", key, err)
	}
	return r, true, nil
}

// cancelMarker asks the job of one delivery of an agent task to stop.
type cancelMarker struct {
	DeliveryID string `json:"delivery_id"`
	// By is the login of who stopped it, empty when GitHub did (closed
	// issue, removed installation).
	By     string `json:"by,omitempty"`
	Reason string `json:"reason"`
}

// The reasons of a cancel marker besides jobs.CancelReason values.
const reasonStop = "stop"

func (s state) setCancel(ctx context.Context, taskID string, m cancelMarker) error {
	b, _ := json.Marshal(m)
	if err := s.rdb.Set(ctx, cancelPrefix+taskID, b, cancelTTL).Err(); err != nil {
		return fmt.Errorf("cancel marker of %s: %w", taskID, err)
	}
	return nil
}

// cancelFor returns the cancel marker of the job of deliveryID, if any.
func (s state) cancelFor(ctx context.Context, taskID, deliveryID string) (cancelMarker, bool, error) {
	b, err := s.rdb.Get(ctx, cancelPrefix+taskID).Bytes()
	if errors.Is(err, redis.Nil) {
		return cancelMarker{}, false, nil
	}
	if err != nil {
		return cancelMarker{}, false, fmt.Errorf("cancel marker of %s: %w", taskID, err)
	}
	var m cancelMarker
	if err := json.Unmarshal(b, &m); err != nil {
		return cancelMarker{}, false, fmt.Errorf("cancel marker of %s: %w", taskID, err)
	}
	return m, m.DeliveryID == deliveryID, nil
}

// claimOnce sets key if it is not set and reports whether this call did:
// the one refusal per user per issue, the rate limit of help.
func (s state) claimOnce(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, key, "1", ttl).Result()
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", key, err)
	}
	return ok, nil
}

func (s state) unclaim(ctx context.Context, key string) {
	s.rdb.Del(context.WithoutCancel(ctx), key)
}
