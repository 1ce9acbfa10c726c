package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
)

// journal keeps, on the worker's own disk (AGENTFIX_DATA_DIR/open), the
// status comments and check runs this worker posted for jobs that have not
// ended yet: what people see of a job lives on GitHub, but what the job is
// lives in Redis, and a Redis that lost its data (no persistence, a
// failover without replication) would leave them saying "queued" or "in
// progress" for good. The sweep ends each whose task Redis no longer has
// with "this request was lost; ask again" (sweepLost). One file a job,
// written whole (a temporary file renamed into place).
type journal struct {
	dir string
	mu  sync.Mutex // one writer of a file at a time in this process
}

// openJob is one journal entry.
type openJob struct {
	Key          string       `json:"key"`
	TaskID       string       `json:"task_id"`
	DeliveryID   string       `json:"delivery_id"`
	Installation int64        `json:"installation"`
	Repo         string       `json:"repo"`
	Thread       int          `json:"thread"`
	Requester    string       `json:"requester"`
	Comment      int64        `json:"comment"`
	Checks       []checkEntry `json:"checks,omitempty"`
}

// checkEntry is a check run of an open job.
type checkEntry struct {
	SHA string `json:"sha"`
	ID  int64  `json:"id"`
}

func (jl *journal) path(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(jl.dir, hex.EncodeToString(sum[:12])+".json")
}

// add records e, or edits what is recorded of its job with edit.
func (jl *journal) add(e openJob, edit func(*openJob)) error {
	jl.mu.Lock()
	defer jl.mu.Unlock()
	p := jl.path(e.Key)
	if b, err := os.ReadFile(p); err == nil {
		var old openJob
		if json.Unmarshal(b, &old) == nil {
			e = old
		}
	}
	if edit != nil {
		edit(&e)
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(jl.dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(jl.dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("journal of open jobs: %w", err)
	}
	return nil
}

// remove forgets job key.
func (jl *journal) remove(key string) {
	jl.mu.Lock()
	defer jl.mu.Unlock()
	_ = os.Remove(jl.path(key))
}

// list returns the open jobs recorded.
func (jl *journal) list() ([]openJob, error) {
	entries, err := os.ReadDir(jl.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal of open jobs: %w", err)
	}
	var out []openJob
	for _, d := range entries {
		if !strings.HasSuffix(d.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(jl.dir, d.Name()))
		if err != nil {
			continue
		}
		var e openJob
		if json.Unmarshal(b, &e) == nil && e.Key != "" {
			out = append(out, e)
		}
	}
	return out, nil
}

// sweepLost ends the open jobs of the journal whose task Redis no longer
// has and that no attempt reported: their status comment says the request
// was lost, and their check runs are completed. A job whose task lives or
// that was reported leaves the journal.
func (w *Worker) sweepLost(ctx context.Context) (int, error) {
	open, err := w.journal.list()
	if err != nil {
		return 0, err
	}
	ended := 0
	for _, e := range open {
		info, err := w.inspector.GetTaskInfo(jobs.QueueAgent, e.TaskID)
		switch {
		case err == nil && payloadDelivery(info.Payload) == e.DeliveryID && info.State != asynq.TaskStateCompleted:
			continue // waiting, running, retried or archived (Sweep ends those)
		case err != nil && !errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound):
			return ended, err
		}
		saved, _, err := w.store.LoadResult(ctx, e.Key)
		if err != nil {
			return ended, err
		}
		if saved.Done == nil {
			if err := w.endLost(ctx, e); err != nil {
				w.log.Warn("end a lost job", logattr.Task, e.TaskID, logattr.Err, err)
				continue
			}
			ended++
		}
		w.journal.remove(e.Key)
	}
	return ended, nil
}

// endLost tells people job e was lost.
func (w *Worker) endLost(ctx context.Context, e openJob) error {
	repo, err := ghapp.ParseRepo(e.Repo)
	if err != nil {
		return err
	}
	gh, err := w.opts.GitHub.Installation(e.Installation)
	if err != nil {
		return err
	}
	log := w.log.With(logattr.Task, e.TaskID, logattr.DeliveryID, e.DeliveryID, logattr.Repo, e.Repo)
	log.Error("this job's task is gone from Redis, which lost its data; telling the requester to ask again")
	const detail = "this request was lost (the bot's queue lost its data); ask again."
	if e.Comment != 0 {
		st := w.statuses.editor(gh, repo, store.CommentRef{ID: e.Comment}, e.Key, e.Requester, log)
		if err := st.Show(ctx, func(d *report.Status) {
			d.Phase, d.Outcome, d.Detail = report.PhaseFailed, outcome.Failed, detail
		}, true); err != nil {
			return err
		}
	}
	for _, c := range e.Checks {
		if _, err := gh.UpdateCheckRun(ctx, repo, c.ID, ghapp.CheckRunUpdate{Name: CheckRunName, Status: "completed",
			Conclusion: "failure", Title: "Lost: ask again", Summary: "The bot's queue lost this job's data; ask again."}); err != nil {
			log.Warn("complete the check run of a lost job", logattr.Err, err)
		}
	}
	return nil
}
