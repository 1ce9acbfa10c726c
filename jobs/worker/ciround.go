package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
)

// autoRound is what the two automatic rounds — a ci round (this file) and
// a conflict round (conflictround.go) — add to a revise round: they are
// rounds on the bot's pull request under its revise task id, so one round
// of a pull request runs at a time and a stop reaches them, but nobody
// asked for them. So the App's bot is their requester; they post no
// status comment (their check run shows their progress, and the admin
// runs page their run) and one reply when they end; and before they work
// they check again what started them: the pull request is the bot's and
// open, its head is still the commit they are for, automatic rounds are
// on and not stopped, no person pushed onto the branch, and the budgets
// are not used up. What refuses them ends them quietly.
type autoRound struct {
	round
	head   string // the pull request's head commit the round is for
	number int    // its number among the pull request's automatic rounds
}

// admit reads the pull request and the repository's settings into the
// round, and checks again that the round may run; a non-empty outcome
// ends it quietly.
func (a *autoRound) admit(ctx context.Context) (outcome.Outcome, error) {
	w, j := a.w, &a.j
	if o, err := w.resume(ctx, j); o != "" {
		return o, err
	}
	if err := w.store.RoundStarted(ctx, j.taskID); err != nil {
		return outcome.Error, err
	}
	p, why, err := w.admitAuto(ctx, j.gh, j.install, j.repo, j.thread, a.head)
	if err != nil {
		return outcome.Error, err
	}
	if why != "" && !j.resumed { // a retry publishes what its agent made
		j.log.Info("automatic round ends before it starts: " + why)
		return outcome.Skipped, nil
	}
	// A retry that publishes a saved result may find what refuses a new
	// round (its own push moved the head): it goes on, with the settings
	// read when they were (the operator's otherwise, see workOn).
	a.pr, a.bot, j.cfg, j.branch = p.pr, p.bot.BotLogin, p.cfg, p.pr.Head
	if !j.resumed {
		scope := budget.Scope{Installation: j.install, Repo: j.repo.String(), Job: j.key, JobLimit: budget.Amount{USD: j.cfg.Limits.MaxCostUSD}}
		var over *budget.ExceededError
		if err := w.gate.budget.Check(ctx, scope, budget.Amount{}); errors.As(err, &over) {
			j.log.Info("automatic round ends before it starts: " + over.Message())
			return outcome.OverBudget, nil
		} else if err != nil {
			return outcome.Error, err
		}
	}
	j.number = issueOf(a.pr)
	if j.number > 0 {
		j.issue, err = j.gh.Issue(ctx, j.repo, j.number)
		if errors.Is(err, ghapp.ErrNotFound) {
			j.number = 0
		} else if err != nil {
			return outcome.Error, err
		}
	}
	if j.number == 0 || j.issue.IsPullRequest {
		// The agent works from the pull request's own text.
		j.number, j.issue = 0, ghapp.Issue{Title: a.pr.Title, Body: a.pr.Body}
	}
	j.log = j.log.With(logattr.Issue, j.number)
	return "", nil
}

// failedAs reports the last failed attempt of the automatic round s: as
// giveUp does, and, since the round has no status comment giveUp would
// end, its check runs ended and its reply.
func (a *autoRound) failedAs(ctx context.Context, s stage, cause error) outcome.Outcome {
	n, _ := asynq.GetRetryCount(ctx)
	o := a.w.giveUp(ctx, s, cause, n+1)
	ctx, cancel := a.w.reportCtx(ctx)
	defer cancel()
	detail := fmt.Sprintf("an internal error stopped the round after %d attempts; the worker's logs have the details.", n+1)
	s.ended(ctx, outcome.Failed, "", a.j.saved.Result)
	if err := s.final(ctx, report.Final{Outcome: outcome.Failed, Detail: detail}, outcome.Failed); err != nil {
		a.j.log.Warn("post the round's reply", logattr.Err, err)
	}
	return o
}

// reply is the data of the round's reply on its pull request.
func (a *autoRound) reply(d report.Final) report.AutoRound {
	w, j := a.w, &a.j
	d = w.finalData(j, d)
	d.Marker = ghapp.Marker("final " + j.key)
	maxRounds := j.cfg.Repo.CI.MaxRounds
	if maxRounds == 0 {
		maxRounds = config.DefaultCIMaxRounds
	}
	out := report.AutoRound{Final: d, Head: report.ShortSHA(a.head), Commit: report.ShortSHA(a.commit),
		Round: a.number, MaxRounds: maxRounds, ConfigFile: config.RepoFile}
	if t := j.saved.Review.Test; t != nil {
		out.TestCommand, out.TestVerdict, out.TestPassed = t.Command, report.TestVerdict(t.ExitCode, t.TimedOut), !j.saved.Review.TestFailed()
	}
	return out
}

// autoTask is what the payloads of both automatic rounds hold
// (jobs.FixChecks, jobs.ResolveConflict).
type autoTask struct {
	DeliveryID   string    `json:"delivery_id"`
	Installation int64     `json:"installation"`
	Repo         jobs.Repo `json:"repo"`
	Number       int       `json:"number"`
	Author       jobs.User `json:"author"`
	Head         string    `json:"head"`
	Round        int       `json:"round"`
	Requester    jobs.User `json:"requester"`
}

// decodeAuto decodes the task of an automatic round of kind (jobs.TypeCI
// or jobs.TypeConflict) into its payload and the round, or says why it
// cannot run.
func decodeAuto[P jobs.FixChecks | jobs.ResolveConflict](w *Worker, kind string, t *asynq.Task) (P, autoRound, error) {
	p, err := jobs.Decode[P](t.Payload())
	var h autoTask
	if err == nil {
		err = json.Unmarshal(t.Payload(), &h)
	}
	var repo ghapp.Repo
	if err == nil {
		repo, err = ghapp.ParseRepo(h.Repo.FullName)
	}
	if err == nil && h.Number <= 0 {
		err = fmt.Errorf("pull request number %d is not positive", h.Number)
	}
	var gh GitHub
	if err == nil {
		gh, err = w.opts.GitHub.Installation(h.Installation)
	}
	if err != nil {
		w.log.Error(kind+" task that cannot run", logattr.Err, err)
		w.metrics.job(kind, outcome.Invalid)
		return p, autoRound{}, skip(fmt.Errorf("%s task: %w", kind, err))
	}
	taskID := jobs.ReviseTaskID(h.Repo.FullName, h.Number)
	return p, autoRound{head: h.Head, number: h.Round, round: round{w: w, author: h.Author, j: job{
		kind: kind, taskID: taskID, key: store.JobKey(taskID, h.DeliveryID), delivery: h.DeliveryID,
		install: h.Installation, repo: repo, clone: h.Repo, requester: h.Requester, thread: h.Number, onPR: true,
		gh: gh, started: w.now(),
		log: w.log.With(logattr.Task, taskID, logattr.DeliveryID, h.DeliveryID, logattr.Repo, h.Repo.FullName,
			logattr.PR, h.Number, logattr.InstallationID, h.Installation),
	}}}, nil
}

// ciRound is a ci round: an automatic round on the bot's pull request
// whose checks failed on its head. Its task holds, for every check that
// failed there, what the check reported (its output, its annotations, the
// lines around the errors of its failed steps' log for a GitHub Actions
// job), with the checks that also fail on the base branch's head named as
// pre-existing and the flaky ones (they passed when re-run) named to be
// left alone; its reply names the checks, what changed and the result of
// the repository's test command on the change.
type ciRound struct {
	autoRound
	flaky  []string
	checks []failedCheck
}

// failedCheck is a failed check and what a ci round gathered of it.
type failedCheck struct {
	ciCheck
	preExisting bool
	report      string
	// noLog says why its log could not be read.
	noLog string
}

// handleCI runs a ci task.
func (w *Worker) handleCI(ctx context.Context, t *asynq.Task) error {
	p, a, err := decodeAuto[jobs.FixChecks](w, jobs.TypeCI, t)
	if err != nil {
		return err
	}
	r := &ciRound{autoRound: a, flaky: p.Flaky}
	err = w.runJob(ctx, r)
	if err == nil || errors.Is(err, asynq.SkipRetry) || lastAttempt(ctx) {
		w.roundEnded(ctx, &r.j, r.author)
	}
	return err
}

func (r *ciRound) job() *job { return &r.j }

// run admits the round, gathers what the failed checks reported, and does
// the work.
func (r *ciRound) run(ctx context.Context) (outcome.Outcome, error) {
	if o, err := r.admit(ctx); o != "" {
		return o, err
	}
	if err := r.gather(ctx); err != nil {
		return outcome.Error, err
	}
	if len(r.toFix()) == 0 && !r.j.resumed {
		r.j.log.Info("ci round ends before it starts: no check to fix is failing")
		return outcome.Skipped, nil
	}
	return r.w.work(ctx, r)
}

// toFix returns the failed checks the round works on: not pre-existing.
func (r *ciRound) toFix() []failedCheck {
	var out []failedCheck
	for _, c := range r.checks {
		if !c.preExisting {
			out = append(out, c)
		}
	}
	return out
}

// names returns the labels of the checks the round works on.
func (r *ciRound) names() []string {
	var out []string
	for _, c := range r.toFix() {
		out = append(out, c.label())
	}
	return out
}

// gather reads the failed checks of the round's head and what each
// reported, and which also fail on the base branch's head.
func (r *ciRound) gather(ctx context.Context) error {
	j := &r.j
	bot, err := r.w.opts.GitHub.Identity(ctx)
	if err != nil {
		return fmt.Errorf("the App's identity: %w", err)
	}
	runs, err := j.gh.ListCheckRuns(ctx, j.repo, r.head)
	if err != nil {
		return err
	}
	pre, err := baseFailures(ctx, j.gh, j.repo, r.pr.Base, bot.ID)
	if err != nil {
		j.log.Warn("read the checks of the base branch; none is taken for pre-existing", logattr.Err, err)
	}
	byID := map[int64]ghapp.CheckRun{}
	for _, run := range runs {
		byID[run.ID] = run
	}
	r.checks = nil
	for _, c := range failingChecks(runs, bot.ID) {
		fc := failedCheck{ciCheck: c, preExisting: pre[c.label()]}
		if !fc.preExisting {
			if fc.report, fc.noLog, err = r.checkReport(ctx, byID[c.id], c); err != nil {
				return err
			}
		}
		r.checks = append(r.checks, fc)
	}
	return nil
}

// checkReport gathers what check c (its run, run) reported: its output,
// its first annotations and, for a GitHub Actions job, its failed steps'
// log. A log GitHub does not give is not an error: noLog says why, and the
// report goes without.
func (r *ciRound) checkReport(ctx context.Context, run ghapp.CheckRun, c ciCheck) (text, noLog string, err error) {
	j := &r.j
	var anns []ghapp.Annotation
	if run.Annotations > 0 {
		if anns, err = j.gh.ListAnnotations(ctx, j.repo, c.id, maxAnnotations); err != nil {
			return "", "", err
		}
	}
	parts := checkParts{title: run.Title, summary: run.Summary, text: run.Text, annotations: annotationLines(anns), total: run.Annotations}
	if c.actions {
		parts.steps, parts.log, noLog = r.jobLog(ctx, c)
		parts.noLog = noLog
	}
	return checkText(parts), noLog, nil
}

// jobLog returns the failed steps of GitHub Actions job c and the excerpt
// of its log, or why the log cannot be had.
func (r *ciRound) jobLog(ctx context.Context, c ciCheck) (steps []string, excerpt, noLog string) {
	j := &r.j
	job, err := j.gh.WorkflowJob(ctx, j.repo, c.id)
	if err != nil {
		j.log.Warn("read a failed job", logattr.Err, err)
		return nil, "", noLogReason(err)
	}
	steps, spans := failedSteps(job)
	log, err := j.gh.JobLog(ctx, j.repo, c.id, maxJobLog)
	if err != nil {
		j.log.Warn("read a failed job's log", logattr.Err, err)
		return steps, "", noLogReason(err)
	}
	return steps, logExcerpt(log.Text, spans, maxLogExcerpt), ""
}

// noLogReason says for people why a job's log could not be read.
func noLogReason(err error) string {
	switch s := ghapp.HTTPStatus(err); {
	case errors.Is(err, ghapp.ErrNoLog) && (s == http.StatusNotFound || s == http.StatusGone):
		return fmt.Sprintf("GitHub answered %d: it no longer keeps it", s)
	case errors.Is(err, ghapp.ErrNoLog) && s == http.StatusForbidden:
		return "GitHub answered 403: the App may not read it; it needs the actions: read permission"
	}
	return report.GitHubTrouble(err)
}

// checkParts is what a round gathered of a failed check.
type checkParts struct {
	title, summary, text string
	// annotations are the first of its total annotations, as lines.
	annotations []string
	total       int
	// steps are the failed steps of a GitHub Actions job, log the excerpt
	// of its log, noLog why it could not be read.
	steps      []string
	log, noLog string
}

// checkText is what the agent is shown of a failed check: its output's
// title, summary and text (each cut), its annotations, and its failed
// steps and their log.
func checkText(p checkParts) string {
	var b strings.Builder
	section := func(head, body string) {
		if body = strings.TrimSpace(body); body != "" {
			fmt.Fprintf(&b, "%s:\n%s\n\n", head, capMiddle(body, maxCheckText))
		}
	}
	if t := strings.TrimSpace(p.title); t != "" {
		fmt.Fprintf(&b, "Title: %s\n\n", strings.Join(strings.Fields(t), " "))
	}
	section("Summary", p.summary)
	section("Details", p.text)
	if len(p.annotations) > 0 {
		head := "Annotations"
		if p.total > len(p.annotations) {
			head = fmt.Sprintf("Annotations (the first %d of %d)", len(p.annotations), p.total)
		}
		section(head, strings.Join(p.annotations, "\n"))
	}
	if len(p.steps) > 0 {
		fmt.Fprintf(&b, "Failed steps: %s\n\n", strings.Join(p.steps, "; "))
	}
	switch {
	case p.noLog != "":
		fmt.Fprintf(&b, "The job's log could not be read (%s); this report has the check's output alone.\n", p.noLog)
	case strings.TrimSpace(p.log) != "":
		fmt.Fprintf(&b, "Log of the failed steps (the lines around their errors):\n%s", p.log)
	}
	if strings.TrimSpace(b.String()) == "" {
		return "The check reported nothing but its conclusion.\n"
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// base: the round starts from the head it is for, as the cache has it.
func (r *ciRound) base(f fetched) (string, error) { return autoBase(&r.j, f, r.head) }

// autoBase returns head, the commit an automatic round is for, once the
// cache has it as the head of the round's branch.
func autoBase(j *job, f fetched, head string) (string, error) {
	b, err := f.branchHead(j, j.branch)
	if err == nil && b != head {
		err = fmt.Errorf("branch %s is at %s on the git server, not at %s", j.branch, report.ShortSHA(b), report.ShortSHA(head))
	}
	return b, err
}

// start puts the round's check run on the head and, when the agent is
// about to run, builds its task: the pull request's diff and the failed
// checks.
func (r *ciRound) start(ctx context.Context, f fetched, base string, agentRuns bool) error {
	w, j := r.w, &r.j
	w.checks.start(ctx, j, base, fmt.Sprintf("Fixing the failing checks of #%d", r.pr.Number), agent.Result{})
	j.message = fmt.Sprintf("Fix the failing checks of #%d\n\nMade by agentfix (run %s), for the checks that failed on %s: %s.",
		r.pr.Number, j.runID(), report.ShortSHA(r.head), strings.Join(r.names(), ", "))
	if !agentRuns {
		return nil
	}
	patch, err := w.prDiff(ctx, j, f, r.pr, base)
	if err != nil {
		return err
	}
	r.revision = &agent.Revision{PR: r.pr.Number, Diff: patch, Flaky: r.flaky}
	for _, c := range r.checks {
		r.revision.Checks = append(r.revision.Checks, agent.FailedCheck{Name: c.name, App: c.app, Conclusion: c.conclusion,
			PreExisting: c.preExisting, Report: c.report})
	}
	j.log.Info(fmt.Sprintf("ci round context: diff of %d bytes, %d failed checks (%d pre-existing), %d flaky",
		len(patch), len(r.checks), len(r.checks)-len(r.toFix()), len(r.flaky)))
	return nil
}

func (r *ciRound) task() agent.Task {
	j := &r.j
	return agent.Task{Repo: j.repo.String(), Issue: j.number, Title: j.issue.Title, Body: j.issue.Body,
		Notes: j.cfg.Repo.Instructions, Revision: r.revision}
}

// final posts the round's reply on the pull request.
func (r *ciRound) final(ctx context.Context, d report.Final, _ outcome.Outcome) error {
	j := &r.j
	rd := r.reply(d)
	for _, c := range r.checks {
		ref := c.ref()
		if c.preExisting {
			rd.PreExisting = append(rd.PreExisting, ref)
			continue
		}
		ref.NoLog = c.noLog
		rd.Checks = append(rd.Checks, ref)
	}
	rd.Flaky = r.flaky
	body, err := r.w.texts.AutoRound(rd)
	if err != nil {
		return err
	}
	_, err = report.PostOnce(ctx, j.gh, j.repo, j.thread, rd.Marker, body)
	return err
}

// failed reports the round's last failed attempt.
func (r *ciRound) failed(ctx context.Context, cause error) outcome.Outcome {
	return r.failedAs(ctx, r, cause)
}

var _ stage = (*ciRound)(nil)
