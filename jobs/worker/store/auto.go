package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/agentfix/agentfix/repo"
)

// AutoTake is what TakeAutoRound found.
type AutoTake string

// The answers of TakeAutoRound.
const (
	// AutoTaken: the round is the pull request's next.
	AutoTaken AutoTake = "taken"
	// AutoSeen: the pull request had this round already (the same head
	// reported twice).
	AutoSeen AutoTake = "seen"
	// AutoFull: the pull request had as many automatic rounds as it may.
	AutoFull AutoTake = "full"
)

// takeAutoRound adds ARGV[1] to the set KEYS[1] unless it is there or the
// set holds ARGV[2] members already; it returns the answer and the number
// of rounds after it.
var takeAutoRound = redis.NewScript(`
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then
  return {'seen', redis.call('SCARD', KEYS[1])}
end
local n = redis.call('SCARD', KEYS[1])
if n >= tonumber(ARGV[2]) then
  return {'full', n}
end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {'taken', n + 1}
`)

func prKey(r repo.Name, number int) string { return fmt.Sprintf("%s#%d", r.Key(), number) }

// TakeAutoRound counts round id (its kind and head commit) as an automatic
// round of pull request number unless it was counted already or the pull
// request had max rounds; it returns what it found and how many rounds
// the pull request has had, this one included when taken.
func (s *Store) TakeAutoRound(ctx context.Context, r repo.Name, number int, id string, max int) (AutoTake, int, error) {
	res, err := takeAutoRound.Run(ctx, s.rdb, []string{autoRoundsPrefix + prKey(r, number)}, id, max, autoTTL.Milliseconds()).Slice()
	if err != nil || len(res) != 2 {
		return "", 0, fmt.Errorf("count the automatic rounds of %s#%d: %v %w", r, number, res, err)
	}
	answer, _ := res[0].(string)
	n, _ := res[1].(int64)
	return AutoTake(answer), int(n), nil
}

// ReleaseAutoRound takes back round id of pull request number, which
// could not start after all.
func (s *Store) ReleaseAutoRound(ctx context.Context, r repo.Name, number int, id string) error {
	if err := s.rdb.SRem(context.WithoutCancel(ctx), autoRoundsPrefix+prKey(r, number), id).Err(); err != nil {
		return fmt.Errorf("release automatic round %s of %s#%d: %w", id, r, number, err)
	}
	return nil
}

// StopAuto records that login stopped the automatic rounds of pull request
// number. The stop holds until ResumeAuto lifts it: it never expires, so
// a pull request left alone for months does not start rounds of its own
// again (the key is a login, a few bytes per stopped pull request).
func (s *Store) StopAuto(ctx context.Context, r repo.Name, number int, login string) error {
	if err := s.rdb.Set(ctx, autoStopPrefix+prKey(r, number), login, 0).Err(); err != nil {
		return fmt.Errorf("stop the automatic rounds of %s#%d: %w", r, number, err)
	}
	return nil
}

// ResumeAuto lifts the stop of the automatic rounds of pull request
// number and returns who had stopped them ("" when nobody had).
func (s *Store) ResumeAuto(ctx context.Context, r repo.Name, number int) (string, error) {
	login, err := s.rdb.GetDel(ctx, autoStopPrefix+prKey(r, number)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("resume the automatic rounds of %s#%d: %w", r, number, err)
	}
	return login, nil
}

// AutoStopped returns who stopped the automatic rounds of pull request
// number, if anyone did.
func (s *Store) AutoStopped(ctx context.Context, r repo.Name, number int) (string, bool, error) {
	login, err := s.rdb.Get(ctx, autoStopPrefix+prKey(r, number)).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read whether the automatic rounds of %s#%d were stopped: %w", r, number, err)
	}
	return login, true, nil
}

// SaveRerun records that the failed jobs of checks were re-run on commit
// of r, unless a re-run was recorded already; it reports whether this
// call recorded it.
func (s *Store) SaveRerun(ctx context.Context, r repo.Name, commit string, checks []string) (bool, error) {
	b, _ := json.Marshal(checks)
	ok, err := s.rdb.SetNX(ctx, rerunPrefix+r.Key()+"@"+commit, b, autoTTL).Result()
	if err != nil {
		return false, fmt.Errorf("record the re-run on %s@%s: %w", r, commit, err)
	}
	return ok, nil
}

// Rerun returns the checks whose failed jobs were re-run on commit of r,
// and whether there was a re-run.
func (s *Store) Rerun(ctx context.Context, r repo.Name, commit string) ([]string, bool, error) {
	b, err := s.rdb.Get(ctx, rerunPrefix+r.Key()+"@"+commit).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read the re-run on %s@%s: %w", r, commit, err)
	}
	var checks []string
	if err := json.Unmarshal(b, &checks); err != nil {
		return nil, false, fmt.Errorf("read the re-run on %s@%s: %w", r, commit, err)
	}
	return checks, true, nil
}

// AutoNoteClaim is the one note what (say, "limit") of automatic rounds
// on pull request number.
func AutoNoteClaim(r repo.Name, number int, what string) Claim {
	return Claim{key: autoNotePrefix + prKey(r, number) + ":" + strings.ToLower(what), ttl: autoTTL}
}
