package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/workspace"
)

// maxConflictSide bounds, in bytes, each side's change to a conflicted
// file that a conflict round's task shows.
const maxConflictSide = 8 << 10

// conflictRound is a conflict round: an automatic round on the bot's pull
// request after its base branch moved and GitHub found it no longer
// merges. The worker merges the base branch's head into the pull
// request's head with its own git (workspace.Merge), leaving conflict
// markers in the files that conflict; the agent resolves them in the
// sandbox (its task lists the files and both sides' changes), and its
// review runs the test command; no conflict marker may remain in what it
// made; the bot pushes a merge commit onto the branch — never a force
// push, so never over commits someone pushed meanwhile.
type conflictRound struct {
	autoRound
	baseBranch, baseHead string // the base branch and the commit merged
	conflicts            []workspace.MergeConflict
}

// handleConflict runs a conflict task.
func (w *Worker) handleConflict(ctx context.Context, t *asynq.Task) error {
	p, a, err := decodeAuto[jobs.ResolveConflict](w, jobs.TypeConflict, t)
	if err != nil {
		return err
	}
	r := &conflictRound{autoRound: a, baseBranch: p.Base, baseHead: p.BaseHead}
	err = w.runJob(ctx, r)
	if err == nil || errors.Is(err, asynq.SkipRetry) || lastAttempt(ctx) {
		w.roundEnded(ctx, &r.j, r.author)
	}
	return err
}

func (r *conflictRound) job() *job { return &r.j }

// run admits the round and does the work, unless the pull request merges
// again meanwhile.
func (r *conflictRound) run(ctx context.Context) (outcome.Outcome, error) {
	if o, err := r.admit(ctx); o != "" {
		return o, err
	}
	if s := r.pr.MergeableState; !r.j.resumed && s != "dirty" && s != "unknown" && s != "" {
		r.j.log.Info("conflict round ends before it starts: the pull request merges (" + s + ")")
		return outcome.Skipped, nil
	}
	if r.pr.Base != r.baseBranch {
		r.j.log.Info("conflict round ends before it starts: the pull request's base is " + r.pr.Base + " now")
		return outcome.Skipped, nil
	}
	return r.w.work(ctx, r)
}

// base: the round starts from the head it is for, as the cache has it.
func (r *conflictRound) base(f fetched) (string, error) { return autoBase(&r.j, f, r.head) }

// start puts the round's check run on the head and, when the agent is
// about to run, the pull request's diff in its task (prepare adds the
// conflicts).
func (r *conflictRound) start(ctx context.Context, f fetched, base string, agentRuns bool) error {
	w, j := r.w, &r.j
	w.checks.start(ctx, j, base, fmt.Sprintf("Resolving the merge conflicts of #%d with %s", r.pr.Number, r.baseBranch), agent.Result{})
	j.message = fmt.Sprintf("Merge branch '%s' into %s\n\nMade by agentfix (run %s), whose agent resolved the conflicts.", r.baseBranch, j.branch, j.runID())
	if !agentRuns {
		return nil
	}
	patch, err := w.prDiff(ctx, j, f, r.pr, base)
	if err != nil {
		return err
	}
	r.revision = &agent.Revision{PR: r.pr.Number, Diff: patch}
	return nil
}

// prepare merges the base branch's head into the working copy, or, for a
// retry that applies the saved result, records the merge alone.
func (r *conflictRound) prepare(ctx context.Context, wt *workspace.WorkTree, resumed bool) error {
	if resumed {
		return wt.RecordMerge(ctx, r.baseHead)
	}
	res, err := wt.Merge(ctx, r.baseHead, maxConflictSide)
	if err != nil {
		return err
	}
	r.conflicts = res.Conflicts
	c := &agent.Conflict{Base: r.baseBranch, BaseHead: r.baseHead, Head: r.head}
	for _, f := range res.Conflicts {
		c.Files = append(c.Files, agent.ConflictFile{Path: f.Path, Ours: f.Ours, Theirs: f.Theirs})
	}
	r.revision.Conflict = c
	r.j.log.Info(fmt.Sprintf("conflict round: merged %s (%s), %d files conflict", r.baseBranch, report.ShortSHA(r.baseHead), len(res.Conflicts)))
	return nil
}

// vet refuses a result in which conflict markers remain.
func (r *conflictRound) vet(res agent.Result) string {
	files := conflictMarkers(res.Patch)
	if len(files) == 0 {
		return ""
	}
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = report.Code(f)
	}
	return fmt.Sprintf("conflict markers remain in %s, so I did not push the merge.", strings.Join(quoted, ", "))
}

func (r *conflictRound) task() agent.Task {
	j := &r.j
	return agent.Task{Repo: j.repo.String(), Issue: j.number, Title: j.issue.Title, Body: j.issue.Body,
		Notes: j.cfg.Repo.Instructions, Revision: r.revision}
}

// final posts the round's reply on the pull request.
func (r *conflictRound) final(ctx context.Context, d report.Final, _ outcome.Outcome) error {
	j := &r.j
	rd := r.reply(d)
	rd.Base = r.baseBranch
	for _, c := range r.conflicts {
		rd.Conflicts = append(rd.Conflicts, c.Path)
	}
	body, err := r.w.texts.AutoRound(rd)
	if err != nil {
		return err
	}
	_, err = report.PostOnce(ctx, j.gh, j.repo, j.thread, rd.Marker, body)
	return err
}

// failed reports the round's last failed attempt.
func (r *conflictRound) failed(ctx context.Context, cause error) outcome.Outcome {
	return r.failedAs(ctx, r, cause)
}

var (
	_ stage    = (*conflictRound)(nil)
	_ preparer = (*conflictRound)(nil)
	_ vetter   = (*conflictRound)(nil)
)

// conflictMarkers returns the files, in order, to which patch adds a line
// that is a conflict marker: <<<<<<<, ||||||| or >>>>>>> (alone or before
// a space), or ======= alone.
func conflictMarkers(patch string) []string {
	var files []string
	file := ""
	for _, line := range strings.Split(patch, "\n") {
		if p, ok := strings.CutPrefix(line, "+++ "); ok {
			file = strings.TrimPrefix(strings.TrimSuffix(p, "\t"), "b/")
			continue
		}
		added, ok := strings.CutPrefix(line, "+")
		if !ok || file == "" || !isMarker(strings.TrimRight(added, "\r")) || slices.Contains(files, file) {
			continue
		}
		files = append(files, file)
	}
	return files
}

func isMarker(s string) bool {
	if s == "=======" {
		return true
	}
	for _, m := range []string{"<<<<<<<", "|||||||", ">>>>>>>"} {
		if rest, ok := strings.CutPrefix(s, m); ok && (rest == "" || rest[0] == ' ') {
			return true
		}
	}
	return false
}
