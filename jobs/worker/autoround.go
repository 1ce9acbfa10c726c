package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/ghapp"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/agentfix/agentfix/jobs/worker/outcome"
	"github.com/agentfix/agentfix/jobs/worker/report"
	"github.com/agentfix/agentfix/jobs/worker/store"
)

// Automatic rounds (issue 14): the bot keeps its own pull requests green
// without being asked. A checks task (a check suite or a failed check run
// completed on a pull request's head) looks at the pull request's checks
// and, once every check suite on the head completed with a failure, starts
// a ci round (ciround.go); a basemoved task (a push to a default branch)
// looks at the bot's pull requests into it and starts a conflict round on
// each that no longer merges. Neither runs when the pull request is not
// the bot's or not open, its head moved on, ci.enabled is false, a stop
// on the pull request turned them off, or a person pushed commits onto
// its branch (a person's command still starts a round). ci.max_rounds
// bounds them per pull request, one per head commit (store.TakeAutoRound);
// reaching the bound is said once.

// errRoundBusy is returned, for asynq to try the task again later, when
// another round of the pull request is queued or running: it may push a
// new head, which the next attempt then sees.
var errRoundBusy = errors.New("another round of the pull request is queued or running")

// errMergeUnknown is returned, for asynq to try the task again later,
// while GitHub has not computed whether a pull request merges.
var errMergeUnknown = errors.New("GitHub has not computed whether the pull request merges yet")

// ciCheck is a check run on a commit as the decisions read it.
type ciCheck struct {
	id         int64 // the check run's id; a GitHub Actions job's id
	name, app  string
	url        string
	conclusion string
	actions    bool // a GitHub Actions job, whose failed jobs can be re-run
}

// label names the check for people and for the records of re-runs: its
// name and, for checks of another App than GitHub Actions, the App's.
func (c ciCheck) label() string {
	if c.actions || c.app == "" {
		return c.name
	}
	return c.name + " (" + c.app + ")"
}

// ref is the check as a text names it.
func (c ciCheck) ref() report.CheckRef {
	return report.CheckRef{Name: c.name, App: c.app, URL: c.url}
}

// autoFacts is what decides whether an automatic round may start on a
// pull request, whatever its checks say.
type autoFacts struct {
	open, mine bool
	// headMoved is set when the pull request's head is no longer the
	// commit the event was about.
	headMoved bool
	enabled   bool   // ci.enabled
	stoppedBy string // who stopped its automatic rounds
	people    []string
}

// autoRefusal says why no automatic round starts on a pull request, or ""
// when one may.
func autoRefusal(f autoFacts) string {
	switch {
	case !f.mine:
		return "the pull request is not the bot's"
	case !f.open:
		return "the pull request is closed"
	case f.headMoved:
		return "the pull request's head moved on"
	case !f.enabled:
		return "ci.enabled is false in " + config.RepoFile
	case f.stoppedBy != "":
		return "@" + f.stoppedBy + " stopped the automatic rounds of the pull request"
	case len(f.people) > 0:
		return "commits by " + strings.Join(f.people, ", ") + " are on the branch"
	}
	return ""
}

// checksFacts is what the checks of a pull request's head say.
type checksFacts struct {
	// pending counts the check suites on the head still queued or running
	// (the App's own and those without runs left out).
	pending int
	// failing are the checks that failed on the head.
	failing []ciCheck
	// rerunFailed is ci.rerun_failed.
	rerunFailed bool
	// rerun are the checks whose failed jobs were re-run on the head, and
	// reran whether that happened.
	rerun []string
	reran bool
}

// checksAction is what a pull request's completed checks ask for.
type checksAction string

const (
	// checksWait: checks still run, or none failed.
	checksWait checksAction = "wait"
	// checksRerun: re-run the failed GitHub Actions jobs first.
	checksRerun checksAction = "rerun"
	// checksFlaky: the checks that failed passed when re-run.
	checksFlaky checksAction = "flaky"
	// checksRound: start a ci round.
	checksRound checksAction = "round"
)

// decideChecks says what the checks of a pull request's head ask for, and
// which checks passed on their re-run (flaky).
func decideChecks(f checksFacts) (checksAction, []string) {
	if f.pending > 0 {
		return checksWait, nil
	}
	var flaky []string
	for _, name := range f.rerun {
		if !slices.ContainsFunc(f.failing, func(c ciCheck) bool { return c.label() == name }) {
			flaky = append(flaky, name)
		}
	}
	switch {
	case len(f.failing) == 0 && len(flaky) > 0:
		return checksFlaky, flaky
	case len(f.failing) == 0:
		return checksWait, nil
	case f.rerunFailed && !f.reran && slices.ContainsFunc(f.failing, func(c ciCheck) bool { return c.actions }):
		return checksRerun, nil
	}
	return checksRound, flaky
}

// committers returns who, besides the bot, made commits of a pull request:
// the commits a person pushed onto the bot's branch. A commit is the
// bot's when GitHub links both its author and its committer to the bot's
// account, or their emails are the bot's commit email.
func committers(commits []ghapp.Commit, botLogin, botEmail string) []string {
	isBot := func(login, email string) bool {
		return strings.EqualFold(login, botLogin) || strings.EqualFold(email, botEmail)
	}
	var out []string
	add := func(login, name string) {
		who := name
		if login != "" {
			who = "@" + login
		}
		if !slices.Contains(out, who) {
			out = append(out, who)
		}
	}
	for _, c := range commits {
		if !isBot(c.AuthorLogin, c.AuthorEmail) {
			add(c.AuthorLogin, c.AuthorName)
		}
		if !isBot(c.CommitterLogin, c.CommitterEmail) {
			add(c.CommitterLogin, c.CommitterName)
		}
	}
	return out
}

// autoPR is one pull request an automatic task looks at.
type autoPR struct {
	gh   GitHub
	repo ghapp.Repo
	pr   ghapp.PullRequest
	cfg  repoSettings
	bot  ghapp.Identity
	log  *slog.Logger
}

// admitAuto reads what decides whether an automatic round may start on
// pull request n, about head (the event's), and returns the pull request
// with why none may ("" when one may).
func (w *Worker) admitAuto(ctx context.Context, gh GitHub, inst int64, repo ghapp.Repo, n int, head string) (autoPR, string, error) {
	a := autoPR{gh: gh, repo: repo}
	var err error
	if a.bot, err = w.opts.GitHub.Identity(ctx); err != nil {
		return a, "", fmt.Errorf("the App's identity: %w", err)
	}
	a.pr, err = gh.PR(ctx, repo, n)
	if errors.Is(err, ghapp.ErrNotFound) {
		return a, "the pull request does not exist", nil
	}
	if err != nil {
		return a, "", err
	}
	// What is read later starts as allowing the round.
	f := autoFacts{open: a.pr.State == "open", mine: strings.EqualFold(a.pr.Author, a.bot.BotLogin),
		headMoved: head != "" && a.pr.HeadSHA != head, enabled: true}
	if why := autoRefusal(f); why != "" {
		return a, why, nil
	}
	a.cfg, err = w.settings.load(ctx, inst, repo)
	var bad *repoConfigError
	if errors.As(err, &bad) {
		return a, "the repository's configuration cannot be used", nil
	}
	if err != nil {
		return a, "", err
	}
	f.enabled = a.cfg.Repo.CI.Enabled
	if f.stoppedBy, _, err = w.store.AutoStopped(ctx, repo, n); err != nil {
		return a, "", err
	}
	if why := autoRefusal(f); why != "" {
		return a, why, nil
	}
	commits, err := gh.PRCommits(ctx, repo, n)
	if err != nil {
		return a, "", err
	}
	author, err := w.publish.commitAuthor(ctx)
	if err != nil {
		return a, "", err
	}
	f.people = committers(commits, a.bot.BotLogin, author.Email)
	return a, autoRefusal(f), nil
}

// handleChecks reads the checks of the pull requests a completed check
// suite or failed check run names, and starts a ci round on each of the
// bot's whose checks failed.
func (w *Worker) handleChecks(ctx context.Context, t *asynq.Task) error {
	p, err := jobs.Decode[jobs.ChecksDone](t.Payload())
	var repo ghapp.Repo
	if err == nil {
		repo, err = ghapp.ParseRepo(p.Repo.FullName)
	}
	var gh GitHub
	if err == nil {
		gh, err = w.opts.GitHub.Installation(p.Installation)
	}
	if err != nil {
		w.metrics.job(jobs.TypeChecks, outcome.Invalid)
		return skip(fmt.Errorf("checks task: %w", err))
	}
	log := w.log.With(logattr.DeliveryID, p.DeliveryID, logattr.Repo, p.Repo.FullName, logattr.InstallationID, p.Installation)
	var errs []error
	for _, n := range p.PRs {
		plog := log.With(logattr.PR, n)
		o, err := w.checksOfPR(ctx, gh, p, repo, n, plog)
		w.metrics.job(jobs.TypeChecks, o)
		if err != nil {
			plog.Warn("checks task failed", logattr.Outcome, o, logattr.Err, err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...) // every outcome of a pull request that errs is retried
}

// checksOfPR decides and does what the checks of p.HeadSHA ask for on
// pull request n.
func (w *Worker) checksOfPR(ctx context.Context, gh GitHub, p jobs.ChecksDone, repo ghapp.Repo, n int, log *slog.Logger) (outcome.Outcome, error) {
	a, why, err := w.admitAuto(ctx, gh, p.Installation, repo, n, p.HeadSHA)
	if err != nil {
		return outcome.Error, err
	}
	if why != "" {
		log.Info("no ci round: " + why)
		return outcome.Skipped, nil
	}
	a.log = log
	head := p.HeadSHA
	suites, err := gh.ListCheckSuites(ctx, repo, head)
	if err != nil {
		return outcome.Error, err
	}
	runs, err := gh.ListCheckRuns(ctx, repo, head)
	if err != nil {
		return outcome.Error, err
	}
	f := checksFacts{failing: failingChecks(runs, a.bot.ID), rerunFailed: a.cfg.Repo.CI.RerunFailed}
	for _, s := range suites {
		if s.AppID != a.bot.ID && s.Runs > 0 && s.Status != "completed" {
			f.pending++
		}
	}
	if f.rerun, f.reran, err = w.store.Rerun(ctx, repo, head); err != nil {
		return outcome.Error, err
	}
	action, flaky := decideChecks(f)
	log.Info(fmt.Sprintf("checks of %s: %d suites pending, %d checks failed: %s", report.ShortSHA(head), f.pending, len(f.failing), action))
	switch action {
	case checksWait:
		return outcome.Skipped, nil
	case checksRerun:
		ok, err := w.rerun(ctx, a, head, f.failing)
		if err != nil {
			return outcome.Error, err
		}
		if ok {
			return outcome.Rerun, nil
		}
	case checksFlaky:
		return w.sayFlaky(ctx, a, head, flaky)
	}
	if len(notPreExisting(ctx, a, f.failing)) == 0 {
		log.Info("no ci round: every failed check fails on the base branch too")
		return outcome.Skipped, nil
	}
	take, round, err := w.store.TakeAutoRound(ctx, repo, n, "ci "+head, a.cfg.Repo.CI.MaxRounds)
	if err != nil {
		return outcome.Error, err
	}
	switch take {
	case store.AutoSeen:
		log.Info("no ci round: the head had its round")
		return outcome.Skipped, nil
	case store.AutoFull:
		return w.sayLimit(ctx, a, head, f.failing)
	}
	q, err := w.queue.EnqueueCI(ctx, jobs.FixChecks{
		DeliveryID: jobs.CIDeliveryID(head), Installation: p.Installation, Repo: p.Repo, Number: n,
		Author: botUser(a.bot), Head: head, Flaky: flaky, Round: round, Requester: botUser(a.bot),
	})
	return w.queued(ctx, a, "ci "+head, q, err)
}

// queued ends an automatic task that enqueued round id: when another
// round held the pull request, id is given back and the task tried again.
func (w *Worker) queued(ctx context.Context, a autoPR, id string, q jobs.Outcome, err error) (outcome.Outcome, error) {
	if err == nil && q == jobs.OutcomeQueued {
		a.log.Info("automatic round queued: " + id)
		return outcome.RoundQueued, nil
	}
	if rerr := w.store.ReleaseAutoRound(ctx, a.repo, a.pr.Number, id); rerr != nil {
		a.log.Warn("give back an automatic round that did not start", logattr.Err, rerr)
	}
	if err != nil {
		return outcome.Error, err
	}
	return outcome.Error, errRoundBusy
}

// failingChecks returns the checks that failed among runs, but the App's
// own (appID).
func failingChecks(runs []ghapp.CheckRun, appID int64) []ciCheck {
	var out []ciCheck
	for _, r := range runs {
		if r.AppID == appID || r.Status != "completed" || !failedConclusion(r.Conclusion) {
			continue
		}
		url := r.HTMLURL
		if r.DetailsURL != "" {
			url = r.DetailsURL
		}
		out = append(out, ciCheck{id: r.ID, name: r.Name, app: r.AppName, url: url, conclusion: r.Conclusion,
			actions: r.AppSlug == ghapp.ActionsAppSlug})
	}
	return out
}

// notPreExisting returns the checks of failing that do not fail on the
// head of a's base branch too. Base checks that cannot be read count as
// passing (logged): the round then works on every failed check.
func notPreExisting(ctx context.Context, a autoPR, failing []ciCheck) []ciCheck {
	pre, err := baseFailures(ctx, a.gh, a.repo, a.pr.Base, a.bot.ID)
	if err != nil {
		a.log.Warn("read the checks of the base branch", logattr.Err, err)
	}
	var out []ciCheck
	for _, c := range failing {
		if !pre[c.label()] {
			out = append(out, c)
		}
	}
	return out
}

// baseFailures returns the labels of the checks that failed on the head
// of branch base.
func baseFailures(ctx context.Context, gh GitHub, repo ghapp.Repo, base string, appID int64) (map[string]bool, error) {
	runs, err := gh.ListCheckRuns(ctx, repo, base)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, c := range failingChecks(runs, appID) {
		out[c.label()] = true
	}
	return out, nil
}

// rerun re-runs the failed GitHub Actions jobs among failing once, and
// reports whether they are re-run (by this task or, at the same time,
// another); their re-run's completion brings the checks back. GitHub
// refusing it (the App lacks actions: write) is logged, and the round goes
// on without it.
func (w *Worker) rerun(ctx context.Context, a autoPR, head string, failing []ciCheck) (bool, error) {
	var names []string
	runs := map[int64]bool{}
	var order []int64
	for _, c := range failing {
		if !c.actions {
			continue
		}
		job, err := a.gh.WorkflowJob(ctx, a.repo, c.id)
		if err != nil {
			return false, err
		}
		names = append(names, c.label())
		if !runs[job.RunID] {
			runs[job.RunID] = true
			order = append(order, job.RunID)
		}
	}
	first, err := w.store.SaveRerun(ctx, a.repo, head, names)
	if err != nil {
		return false, err
	}
	if !first {
		a.log.Info("another task re-runs the failed jobs")
		return true, nil
	}
	for _, id := range order {
		if err := a.gh.RerunFailedJobs(ctx, a.repo, id); err != nil {
			a.log.Warn("re-run the failed jobs; going on without", logattr.Err, err)
			return false, nil
		}
	}
	a.log.Info(fmt.Sprintf("re-ran the failed jobs of %d workflow runs: %s", len(order), strings.Join(names, ", ")))
	return true, nil
}

// sayFlaky says once on the pull request that the checks that failed on
// head passed when re-run.
func (w *Worker) sayFlaky(ctx context.Context, a autoPR, head string, flaky []string) (outcome.Outcome, error) {
	var refs []report.CheckRef
	for _, name := range flaky {
		refs = append(refs, report.CheckRef{Name: name})
	}
	d := w.autoNote(a, "ci-flaky "+head, head, refs)
	return outcome.Flaky, w.noteOnce(ctx, a, "flaky "+head, d, w.texts.CIFlaky)
}

// sayLimit says once on the pull request that it had as many automatic
// rounds as it may, naming the checks that still fail.
func (w *Worker) sayLimit(ctx context.Context, a autoPR, head string, failing []ciCheck) (outcome.Outcome, error) {
	var refs []report.CheckRef
	for _, c := range failing {
		refs = append(refs, c.ref())
	}
	d := w.autoNote(a, "ci-limit", head, refs)
	a.log.Info("no automatic round: the pull request had as many as ci.max_rounds allows")
	return outcome.LimitReached, w.noteOnce(ctx, a, "limit", d, w.texts.CILimit)
}

// autoNote is the data of a note about the automatic rounds of a's pull
// request.
func (w *Worker) autoNote(a autoPR, marker, head string, checks []report.CheckRef) report.AutoNote {
	return report.AutoNote{Marker: ghapp.Marker(fmt.Sprintf("%s %s#%d", marker, a.repo.Key(), a.pr.Number)), Head: report.ShortSHA(head),
		Checks: checks, MaxRounds: a.cfg.Repo.CI.MaxRounds, Command: w.opts.Config.Command, ConfigFile: config.RepoFile}
}

// noteOnce posts the note render makes of d on a's pull request, once for
// what; a failed post frees the claim for the task's retry.
func (w *Worker) noteOnce(ctx context.Context, a autoPR, what string, d report.AutoNote, render func(report.AutoNote) (string, error)) error {
	claim := store.AutoNoteClaim(a.repo, a.pr.Number, what)
	first, err := w.store.ClaimOnce(ctx, claim)
	if err != nil || !first {
		return err
	}
	body, err := render(d)
	if err == nil {
		_, err = report.PostOnce(ctx, a.gh, a.repo, a.pr.Number, d.Marker, body)
	}
	if err != nil {
		w.store.Unclaim(ctx, claim)
	}
	return err
}

// botUser is the App's bot as a payload names a user: the requester of
// the rounds nobody asked for.
func botUser(id ghapp.Identity) jobs.User {
	return jobs.User{Login: id.BotLogin, Type: "Bot"}
}

// handleBaseMoved looks at the bot's open pull requests into a default
// branch that moved, and starts a conflict round on each that no longer
// merges with it.
func (w *Worker) handleBaseMoved(ctx context.Context, t *asynq.Task) error {
	p, err := jobs.Decode[jobs.BaseMoved](t.Payload())
	var repo ghapp.Repo
	if err == nil {
		repo, err = ghapp.ParseRepo(p.Repo.FullName)
	}
	var gh GitHub
	if err == nil {
		gh, err = w.opts.GitHub.Installation(p.Installation)
	}
	if err != nil {
		w.metrics.job(jobs.TypeBaseMoved, outcome.Invalid)
		return skip(fmt.Errorf("basemoved task: %w", err))
	}
	log := w.log.With(logattr.DeliveryID, p.DeliveryID, logattr.Repo, p.Repo.FullName, logattr.InstallationID, p.Installation)
	bot, err := w.opts.GitHub.Identity(ctx)
	if err != nil {
		w.metrics.job(jobs.TypeBaseMoved, outcome.Error)
		return fmt.Errorf("the App's identity: %w", err)
	}
	prs, err := gh.ListOpenPRs(ctx, repo, p.Branch)
	if err != nil {
		w.metrics.job(jobs.TypeBaseMoved, outcome.Error)
		return err
	}
	var errs []error
	for _, pr := range prs {
		if !strings.EqualFold(pr.Author, bot.BotLogin) {
			continue
		}
		plog := log.With(logattr.PR, pr.Number)
		o, err := w.conflictOfPR(ctx, gh, p, repo, pr.Number, plog)
		w.metrics.job(jobs.TypeBaseMoved, o)
		if err != nil {
			plog.Warn("basemoved task failed", logattr.Outcome, o, logattr.Err, err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// conflictOfPR starts a conflict round on pull request n when it no longer
// merges with its base branch, moved to p.After.
func (w *Worker) conflictOfPR(ctx context.Context, gh GitHub, p jobs.BaseMoved, repo ghapp.Repo, n int, log *slog.Logger) (outcome.Outcome, error) {
	a, why, err := w.admitAuto(ctx, gh, p.Installation, repo, n, "")
	if err != nil {
		return outcome.Error, err
	}
	if why != "" {
		log.Info("no conflict round: " + why)
		return outcome.Skipped, nil
	}
	a.log = log
	switch {
	case a.pr.Mergeable == nil || a.pr.MergeableState == "unknown":
		return outcome.Error, errMergeUnknown
	case a.pr.MergeableState != "dirty":
		log.Info("no conflict round: the pull request merges (" + a.pr.MergeableState + ")")
		return outcome.Skipped, nil
	}
	head := a.pr.HeadSHA
	id := "conflict " + head + " " + p.After
	take, round, err := w.store.TakeAutoRound(ctx, repo, n, id, a.cfg.Repo.CI.MaxRounds)
	if err != nil {
		return outcome.Error, err
	}
	switch take {
	case store.AutoSeen:
		return outcome.Skipped, nil
	case store.AutoFull:
		return w.sayLimit(ctx, a, head, nil)
	}
	q, err := w.queue.EnqueueConflict(ctx, jobs.ResolveConflict{
		DeliveryID: jobs.ConflictDeliveryID(head, p.After), Installation: p.Installation, Repo: p.Repo, Number: n,
		Author: botUser(a.bot), Head: head, Base: p.Branch, BaseHead: p.After, Round: round, Requester: botUser(a.bot),
	})
	return w.queued(ctx, a, id, q, err)
}

// stopAutoRounds turns the automatic rounds of pull request pr off for a
// stop command on it, when pr is the bot's and the requester may write;
// it reports whether it did.
func (nt *notice) stopAutoRounds(ctx context.Context, pr ghapp.PullRequest) (bool, error) {
	mine, err := nt.w.isBotPR(ctx, pr)
	if err != nil || !mine {
		return false, err
	}
	perm, err := nt.gh.Permission(ctx, nt.repo, nt.n.Requester.Login)
	if err != nil || !perm.CanWrite() {
		return false, err
	}
	if err := nt.w.store.StopAuto(ctx, nt.repo, pr.Number, nt.n.Requester.Login); err != nil {
		return false, err
	}
	nt.log.Info("automatic rounds of the pull request stopped")
	return true, nil
}

// resume handles a resume command: on the bot's pull request, someone
// with write access turns its automatic rounds back on after a stop, and
// the checks of its head are looked at again at once (a checks task of
// the command's delivery), so checks that failed while the rounds were
// off get their round now. Anywhere else it gets a reply saying why
// nothing changed.
func (nt *notice) resume(ctx context.Context) (outcome.Outcome, error) {
	n, w := nt.n, nt.w
	d := w.replies.data(n.Requester.Login, n.DeliveryID)
	d.IsPR = n.IsPR
	reply := func(k report.ReplyKind) (outcome.Outcome, error) {
		return posted(outcome.Replied, w.replies.post(ctx, nt.gh, nt.repo, n.Number, k, d))
	}
	if !n.IsPR {
		return reply(report.ReplyNothingToResume)
	}
	pr, err := nt.gh.PR(ctx, nt.repo, n.Number)
	if err != nil {
		return outcome.Error, err
	}
	if mine, err := w.isBotPR(ctx, pr); err != nil {
		return outcome.Error, err
	} else if !mine {
		return reply(report.ReplyNotMyPR)
	}
	if perm, err := nt.gh.Permission(ctx, nt.repo, n.Requester.Login); err != nil {
		return outcome.Error, err
	} else if !perm.CanWrite() {
		return reply(report.ReplyResumeRefused)
	}
	if d.StoppedBy, err = w.store.ResumeAuto(ctx, nt.repo, pr.Number); err != nil {
		return outcome.Error, err
	}
	if d.StoppedBy == "" {
		return reply(report.ReplyNothingToResume)
	}
	nt.log.Info("automatic rounds of the pull request resumed; @" + d.StoppedBy + " had stopped them")
	if pr.State == "open" {
		err := w.queue.SubmitChecks(ctx, jobs.ChecksDone{DeliveryID: n.DeliveryID, Installation: n.Installation,
			Repo: n.Repo, HeadSHA: pr.HeadSHA, PRs: []int{pr.Number}})
		if err != nil && !errors.Is(err, jobs.ErrDuplicate) {
			return outcome.Error, fmt.Errorf("look at the checks of %s again: %w", report.ShortSHA(pr.HeadSHA), err)
		}
	}
	return reply(report.ReplyAutoResumed)
}
