// Package store is the worker's state in Redis: one Store type owns every
// key the worker writes, listed in keys.go — job locks, status comments,
// saved results, check runs, cancel markers, one-time claims, and the
// commands kept for follow-up rounds (followup.go).
package store

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
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/proof"
	"github.com/agentfix/agentfix/session"
	"github.com/agentfix/agentfix/tools"
)

// Store is the worker's state in Redis. It is safe for concurrent use.
type Store struct {
	rdb  redis.UniversalClient
	poll time.Duration // wait between looks at a key another task holds
}

// New returns the store on rdb; poll is the wait between two looks at a
// key another task holds (a job lock, a status comment being created).
func New(rdb redis.UniversalClient, poll time.Duration) *Store {
	return &Store{rdb: rdb, poll: poll}
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

// LockJob makes sure one handler at a time works on job key (a retry that
// asynq started while the previous attempt still reports its end waits).
// It returns the function that releases the lock; a lock whose owner died
// expires after a minute.
func (s *Store) LockJob(ctx context.Context, key string) (func(), error) {
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

// CommentRef is a comment the worker made and finds again.
type CommentRef struct {
	ID  int64
	URL string
}

func (c CommentRef) encode() string { return strconv.FormatInt(c.ID, 10) + " " + c.URL }

func decodeCommentRef(s string) (CommentRef, bool) {
	id, url, ok := strings.Cut(s, " ")
	n, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil || n <= 0 {
		return CommentRef{}, false
	}
	return CommentRef{ID: n, URL: url}, true
}

// StatusComment returns job key's status comment, creating it with create
// when nobody has: the notice task and the job may race on it, so creation
// is claimed in Redis (SET NX) and the loser waits for the winner's id.
// create must itself find a comment an earlier, crashed attempt made.
func (s *Store) StatusComment(ctx context.Context, key string, create func(context.Context) (CommentRef, error)) (CommentRef, error) {
	k := statusPrefix + key
	for {
		v, err := s.rdb.Get(ctx, k).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return CommentRef{}, fmt.Errorf("status comment of %s: %w", key, err)
		}
		if ref, ok := decodeCommentRef(v); ok {
			return ref, nil
		}
		if err == nil { // "pending": another task is creating it
			if err := sleep(ctx, s.poll); err != nil {
				return CommentRef{}, fmt.Errorf("status comment of %s: %w", key, err)
			}
			continue
		}
		won, err := s.rdb.SetNX(ctx, k, "pending", statusPending).Result()
		if err != nil {
			return CommentRef{}, fmt.Errorf("status comment of %s: %w", key, err)
		}
		if !won {
			continue
		}
		ref, err := create(ctx)
		if err != nil {
			s.rdb.Del(context.WithoutCancel(ctx), k)
			return CommentRef{}, err
		}
		if err := s.rdb.Set(ctx, k, ref.encode(), statusTTL).Err(); err != nil {
			return CommentRef{}, fmt.Errorf("status comment of %s: %w", key, err)
		}
		return ref, nil
	}
}

// KnownStatusComment returns job key's status comment if one was made.
func (s *Store) KnownStatusComment(ctx context.Context, key string) (CommentRef, bool, error) {
	v, err := s.rdb.Get(ctx, statusPrefix+key).Result()
	if errors.Is(err, redis.Nil) {
		return CommentRef{}, false, nil
	}
	if err != nil {
		return CommentRef{}, false, fmt.Errorf("status comment of %s: %w", key, err)
	}
	ref, ok := decodeCommentRef(v)
	return ref, ok, nil
}

// Saved is what the agent produced, kept before anything is published, so
// a retry after a GitHub failure publishes it again instead of running the
// agent again.
type Saved struct {
	RunID  string         `json:"run_id"`
	Base   string         `json:"base"`
	Result agent.Result   `json:"result"`
	Model  string         `json:"model"`
	Review session.Review `json:"review"`
	// Environment is where the run's commands ran.
	Environment session.Environment `json:"environment"`
	// Ready is set once a round that completed its pull request marked it
	// ready for review, so a retry does not ask again.
	Ready bool       `json:"ready,omitempty"`
	Done  *Published `json:"done,omitempty"`
}

// Published marks a job whose outcome was fully reported.
type Published struct {
	Outcome outcome.Outcome `json:"outcome"`
	PR      int             `json:"pr,omitempty"`
	PRURL   string          `json:"pr_url,omitempty"`
}

// SaveResult keeps job key's result.
func (s *Store) SaveResult(ctx context.Context, key string, r Saved) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("save result of %s: %w", key, err)
	}
	if err := s.rdb.Set(ctx, resultPrefix+key, b, resultTTL).Err(); err != nil {
		return fmt.Errorf("save result of %s: %w", key, err)
	}
	return nil
}

// LoadResult returns job key's saved result, if an attempt saved one.
func (s *Store) LoadResult(ctx context.Context, key string) (Saved, bool, error) {
	b, err := s.rdb.Get(ctx, resultPrefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return Saved{}, false, nil
	}
	if err != nil {
		return Saved{}, false, fmt.Errorf("load result of %s: %w", key, err)
	}
	var r Saved
	if err := json.Unmarshal(b, &r); err != nil {
		return Saved{}, false, fmt.Errorf("load result of %s: %w", key, err)
	}
	return r, true, nil
}

// CheckRun is a check run a job put on a commit.
type CheckRun struct {
	SHA string
	ID  int64
	// Done is set once the job completed it.
	Done bool
}

// CheckRuns returns the check runs job key put on commits.
func (s *Store) CheckRuns(ctx context.Context, key string) ([]CheckRun, error) {
	m, err := s.rdb.HGetAll(ctx, checkPrefix+key).Result()
	if err != nil {
		return nil, fmt.Errorf("check runs of %s: %w", key, err)
	}
	out := make([]CheckRun, 0, len(m))
	for sha, v := range m {
		idText, done := strings.CutSuffix(v, " done")
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("check run of %s on %s: %q: %w", key, sha, v, err)
		}
		out = append(out, CheckRun{SHA: sha, ID: id, Done: done})
	}
	return out, nil
}

// SetCheckRun remembers check run r of job key, so a retry completes the
// same one.
func (s *Store) SetCheckRun(ctx context.Context, key string, r CheckRun) error {
	v := strconv.FormatInt(r.ID, 10)
	if r.Done {
		v += " done"
	}
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, checkPrefix+key, r.SHA, v)
		p.Expire(ctx, checkPrefix+key, checkTTL)
		return nil
	})
	if err != nil {
		return fmt.Errorf("remember check run of %s on %s: %w", key, r.SHA, err)
	}
	return nil
}

// CancelMarker asks the job of one delivery of an agent task to stop.
type CancelMarker struct {
	DeliveryID string `json:"delivery_id"`
	// By is the login of who stopped it, empty when GitHub did (closed
	// issue, removed installation).
	By     string `json:"by,omitempty"`
	Reason string `json:"reason"`
}

// ReasonStop is the reason of a person's stop command; the others are
// jobs.CancelReason values.
const ReasonStop = "stop"

// SetCancel sets the cancel marker of agent task taskID.
func (s *Store) SetCancel(ctx context.Context, taskID string, m CancelMarker) error {
	b, _ := json.Marshal(m)
	if err := s.rdb.Set(ctx, cancelPrefix+taskID, b, cancelTTL).Err(); err != nil {
		return fmt.Errorf("cancel marker of %s: %w", taskID, err)
	}
	return nil
}

// CancelFor returns the cancel marker of the job of deliveryID, if any.
func (s *Store) CancelFor(ctx context.Context, taskID, deliveryID string) (CancelMarker, bool, error) {
	b, err := s.rdb.Get(ctx, cancelPrefix+taskID).Bytes()
	if errors.Is(err, redis.Nil) {
		return CancelMarker{}, false, nil
	}
	if err != nil {
		return CancelMarker{}, false, fmt.Errorf("cancel marker of %s: %w", taskID, err)
	}
	var m CancelMarker
	if err := json.Unmarshal(b, &m); err != nil {
		return CancelMarker{}, false, fmt.Errorf("cancel marker of %s: %w", taskID, err)
	}
	return m, m.DeliveryID == deliveryID, nil
}

// ClaimOnce sets c if it is not set and reports whether this call did.
func (s *Store) ClaimOnce(ctx context.Context, c Claim) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, c.key, "1", c.ttl).Result()
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", c.key, err)
	}
	return ok, nil
}

// Unclaim frees c, after the work it claimed failed.
func (s *Store) Unclaim(ctx context.Context, c Claim) {
	s.rdb.Del(context.WithoutCancel(ctx), c.key)
}

// SetJobRun remembers runID as the run of job key's current attempt.
func (s *Store) SetJobRun(ctx context.Context, key, runID string) error {
	if err := s.rdb.Set(ctx, jobRunPrefix+key, runID, jobRunTTL).Err(); err != nil {
		return fmt.Errorf("remember the run of %s: %w", key, err)
	}
	return nil
}

// JobRun returns the run of job key's latest attempt, "" when it has none.
func (s *Store) JobRun(ctx context.Context, key string) (string, error) {
	v, err := s.rdb.Get(ctx, jobRunPrefix+key).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("the run of %s: %w", key, err)
	}
	return v, nil
}

// Lead makes this caller the leader of name for ttl, when no one else is:
// one worker of many runs a periodic sweep. release gives the lead up.
func (s *Store) Lead(ctx context.Context, name string, ttl time.Duration) (release func(), ok bool, err error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	k := leaderPrefix + name
	ok, err = s.rdb.SetNX(ctx, k, token, ttl).Result()
	if err != nil || !ok {
		return func() {}, false, err
	}
	return func() {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = releaseLock.Run(rctx, s.rdb, []string{k}, token).Err()
	}, true, nil
}

// baseline is a saved base commit's run of a test command.
type baseline struct {
	Test tools.TestResult `json:"test"`
	Run  proof.Run        `json:"run"`
}

// Baseline returns the base commit's run saved under key (a
// session.BaselineCache); a value that cannot be read counts as none.
func (s *Store) Baseline(ctx context.Context, key string) (*tools.TestResult, *proof.Run, bool) {
	b, err := s.rdb.Get(ctx, baselinePrefix+key).Bytes()
	if err != nil {
		return nil, nil, false
	}
	var v baseline
	if json.Unmarshal(b, &v) != nil {
		return nil, nil, false
	}
	return &v.Test, &v.Run, true
}

// SaveBaseline keeps the base commit's run under key for a week; a
// failure only costs the next job a run.
func (s *Store) SaveBaseline(ctx context.Context, key string, t tools.TestResult, r proof.Run) {
	b, err := json.Marshal(baseline{Test: t, Run: r})
	if err == nil {
		s.rdb.Set(ctx, baselinePrefix+key, b, baselineTTL)
	}
}
