package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/store"
	"github.com/agentfix/agentfix/runs"
)

// TestSweepEndsArchivedJobs: a fix task asynq archived without its
// handler reporting (here archived by hand; in production a worker killed
// on every attempt, whose lease expired) is ended by the sweep: its status
// comment says it failed, a final comment tells the requester, the run an
// attempt left "running" is marked failed and its working copy removed —
// once, however often the sweep runs.
func TestSweepEndsArchivedJobs(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	w := p.worker(func(o *Options) { o.SweepInterval = 50 * time.Millisecond })
	fi := p.labeled(hRequester)
	p.submit(w, fi)
	taskID := jobs.FixTaskID(hRepo, p.issue)
	key := store.JobKey(taskID, fi.DeliveryID)
	if err := asynq.NewInspectorFromRedisClient(p.rdb).ArchiveTask(jobs.QueueAgent, taskID); err != nil {
		t.Fatal(err)
	}
	// An attempt that got as far as its run and working copy, then died.
	rec, err := p.runs.Create(t.Context(), runs.Meta{Kind: jobs.TypeFix, TaskID: taskID, DeliveryID: fi.DeliveryID, Repo: hRepo, Number: p.issue})
	if err != nil {
		t.Fatal(err)
	}
	rec.Close()
	if err := w.store.SetJobRun(t.Context(), key, rec.ID()); err != nil {
		t.Fatal(err)
	}
	workCopy := filepath.Join(p.cfg.DataDir, "jobs", rec.ID())
	if err := os.MkdirAll(workCopy, 0o755); err != nil {
		t.Fatal(err)
	}
	p.start(w)
	final := p.waitForComments("the sweep's final comment", p.issue, "agentfix:final", 1)[0]
	if !strings.Contains(final.Body, "the worker stopped on every attempt of this job") || !strings.Contains(final.Body, "@"+hRequester) {
		t.Errorf("final comment:\n%s", final.Body)
	}
	p.waitFor("the status comment to say it failed", func() bool {
		s := p.gh.commentsWith(p.issue, "agentfix:status")
		return len(s) == 1 && strings.Contains(s[0].Body, "❌ **Failed**")
	})
	got, err := p.runs.Get(t.Context(), rec.ID())
	if err != nil || got.Meta.Status != string(outcome.Failed) {
		t.Errorf("run record = %+v, %v; want failed", got.Meta, err)
	}
	if _, err := os.Stat(workCopy); !os.IsNotExist(err) {
		t.Errorf("the working copy is still there (stat: %v)", err)
	}
	// The loop's sweep records the end after its comments: a sweep of
	// the test's own that overlapped it would end the job a second time.
	p.waitFor("the sweep to record the job's end", func() bool {
		saved, _, err := w.store.LoadResult(t.Context(), key)
		return err == nil && saved.Done != nil
	})
	if n, err := w.Sweep(t.Context()); err != nil || n != 0 {
		t.Errorf("a second sweep ended %d jobs (%v), want 0", n, err)
	}
	if n := len(p.gh.commentsWith(p.issue, "agentfix:final")); n != 1 {
		t.Errorf("final comments = %d, want 1", n)
	}
}

// TestSweepEndsLostJobs: Redis loses its data (FLUSHALL) between the
// notice, which posted the job's "queued" status comment, and the job; the
// sweep of the worker's journal ends that comment once, saying the request
// was lost, while a job whose task still waits is left alone.
func TestSweepEndsLostJobs(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	w := p.worker()
	p.label(w, hRequester)
	status := p.gh.commentsWith(p.issue, "agentfix:status")
	if len(status) != 1 || !strings.Contains(status[0].Body, "**Queued**") {
		t.Fatalf("status comments = %+v, want one, queued", status)
	}
	if n, err := w.sweepLost(t.Context()); err != nil || n != 0 {
		t.Fatalf("sweep while the job waits = %d, %v; want 0", n, err)
	}
	if err := p.rdb.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := w.sweepLost(t.Context()); err != nil || n != 1 {
		t.Fatalf("sweep after the data loss = %d, %v; want 1", n, err)
	}
	status = p.gh.commentsWith(p.issue, "agentfix:status")
	if len(status) != 1 || !strings.Contains(status[0].Body, "this request was lost") {
		t.Errorf("status comment after the sweep:\n%+v", status)
	}
	if n, err := w.sweepLost(t.Context()); err != nil || n != 0 {
		t.Errorf("a second sweep = %d, %v; want 0", n, err)
	}
}

// TestSweepEndsArchivedAutomaticRounds: a ci round asynq archived without
// its handler reporting, after an attempt put its check run on the head,
// is ended by the sweep like any job: the check run is completed, one
// reply on the pull request says the round stopped (no status comment: an
// automatic round has none), its run record is marked failed — once.
func TestSweepEndsArchivedAutomaticRounds(t *testing.T) {
	t.Parallel()
	p := newPipeWorld(t)
	w := p.worker()
	branch := fmt.Sprintf("agent-fix/issue-%d", p.issue)
	pr := p.gh.addPR(fmt.Sprintf("Fix #%d: Add subtracts", p.issue), branch, pipeBot)
	head, ok := p.git.branch("main")
	if !ok {
		t.Fatal("no main branch")
	}
	bot := jobs.User{Login: pipeBot, Type: "Bot"}
	fc := jobs.FixChecks{DeliveryID: jobs.CIDeliveryID(head), Installation: hInstall, Repo: p.repo(),
		Number: pr, Author: bot, Head: head, Round: 1, Requester: bot}
	if _, err := p.queue.EnqueueCI(t.Context(), fc); err != nil {
		t.Fatal(err)
	}
	taskID := jobs.ReviseTaskID(hRepo, pr)
	key := store.JobKey(taskID, fc.DeliveryID)
	if err := asynq.NewInspectorFromRedisClient(p.rdb).ArchiveTask(jobs.QueueAgent, taskID); err != nil {
		t.Fatal(err)
	}
	// The attempt that died had its run and its check run on the head.
	rec, err := p.runs.Create(t.Context(), runs.Meta{Kind: jobs.TypeCI, TaskID: taskID, DeliveryID: fc.DeliveryID, Repo: hRepo, Number: pr})
	if err != nil {
		t.Fatal(err)
	}
	rec.Close()
	if err := w.store.SetJobRun(t.Context(), key, rec.ID()); err != nil {
		t.Fatal(err)
	}
	repo, _ := ghapp.ParseRepo(hRepo)
	cr, err := p.gh.CreateCheckRun(t.Context(), repo, ghapp.NewCheckRun{Name: CheckRunName, HeadSHA: head, ExternalID: key, Status: "in_progress",
		Title: "Fixing the failing checks", Summary: "working"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.store.SetCheckRun(t.Context(), key, store.CheckRun{SHA: head, ID: cr.ID}); err != nil {
		t.Fatal(err)
	}

	if n, err := w.Sweep(t.Context()); err != nil || n != 1 {
		t.Fatalf("the sweep ended %d jobs (%v), want 1\nlogs:\n%s", n, err, tail(p.logs.String(), 6000))
	}
	replies := p.gh.commentsWith(pr, "agentfix:final "+key)
	if len(replies) != 1 || !strings.Contains(replies[0].Body, "the worker stopped on every attempt of this round") ||
		!strings.Contains(replies[0].Body, "Automatic round 1 of at most 2") {
		t.Fatalf("the round's replies = %+v, want one saying it stopped", replies)
	}
	if s := p.gh.commentsWith(pr, "agentfix:status"); len(s) != 0 {
		t.Errorf("the sweep posted a status comment for an automatic round: %+v", s)
	}
	found := false
	for _, c := range p.gh.allCheckRuns() {
		if c.ID == cr.ID {
			found = true
			if c.Status != "completed" || c.Conclusion == "" {
				t.Errorf("the round's check run = %s/%s, want it completed", c.Status, c.Conclusion)
			}
		}
	}
	if !found {
		t.Errorf("the round's check run %d is gone", cr.ID)
	}
	got, err := p.runs.Get(t.Context(), rec.ID())
	if err != nil || got.Meta.Status != string(outcome.Failed) {
		t.Errorf("run record = %+v, %v; want failed", got.Meta, err)
	}
	if n, err := w.Sweep(t.Context()); err != nil || n != 0 {
		t.Errorf("a second sweep ended %d jobs (%v), want 0", n, err)
	}
	if n := len(p.gh.commentsWith(pr, "agentfix:final")); n != 1 {
		t.Errorf("replies after a second sweep = %d, want 1", n)
	}
}
