package report

// The texts of automatic rounds: the rounds the bot starts on its own pull
// requests when their checks fail (ci) or they no longer merge with their
// base branch (conflict), and the notes it says once about them.

// Template names of automatic rounds.
const (
	tmplAutoRound = "auto_round.md.tmpl"
	tmplCILimit   = "ci_limit.md.tmpl"
	tmplCIFlaky   = "ci_flaky.md.tmpl"
)

// The replies about automatic rounds.
const (
	// ReplyAutoStopped: a stop on the bot's pull request with nothing
	// running; no automatic round starts on it until a resume.
	ReplyAutoStopped ReplyKind = "auto_stopped"
	// ReplyAutoResumed: a resume lifted the stop of someone (StoppedBy).
	ReplyAutoResumed ReplyKind = "auto_resumed"
	// ReplyNothingToResume: a resume on an issue, or on a pull request of
	// the bot's whose automatic rounds were not stopped.
	ReplyNothingToResume ReplyKind = "nothing_to_resume"
	// ReplyResumeRefused: a resume by someone without write access.
	ReplyResumeRefused ReplyKind = "resume_refused"
)

// CheckRef is a check a text names.
type CheckRef struct {
	Name string
	// App is the App that ran it; URL its page.
	App, URL string
	// NoLog says why its log could not be read; empty when it was, or
	// when it has none (a check that is no GitHub Actions job).
	NoLog string
}

// AutoRound is the data of an automatic round's reply on its pull
// request: a ci round (Checks) or a conflict round (Base).
type AutoRound struct {
	Final
	// Checks are the failed checks a ci round worked on, PreExisting
	// those that fail on the base branch too (left alone), Flaky those
	// that passed when re-run (left alone).
	Checks      []CheckRef
	PreExisting []CheckRef
	Flaky       []string
	// Base is the base branch a conflict round merged, Conflicts the files
	// that conflicted.
	Base      string
	Conflicts []string
	// Head is the commit the round started from and Commit the one it
	// pushed (short; empty when it pushed none).
	Head, Commit string
	// Round is this round's number among the pull request's automatic
	// rounds, of at most MaxRounds.
	Round, MaxRounds int
	// TestCommand is the repository's test command, TestVerdict its
	// result on the change in the sandbox in words ("" when it did not
	// run).
	TestCommand, TestVerdict string
	TestPassed               bool
	// ConfigFile is the repository's configuration file.
	ConfigFile string
}

// AutoRound renders an automatic round's reply on its pull request.
func (x *Texts) AutoRound(d AutoRound) (string, error) {
	d.Patch = cutPatch(d.Patch)
	return x.render(tmplAutoRound, d)
}

// AutoNote is the data of a note about automatic rounds said once on a
// pull request.
type AutoNote struct {
	Marker string
	// Head is the commit the note is about (short).
	Head string
	// Checks are the checks that still fail (limit) or that passed when
	// re-run (flaky).
	Checks    []CheckRef
	MaxRounds int
	// Command triggers the bot; ConfigFile is the repository's
	// configuration file.
	Command, ConfigFile string
}

// CILimit renders the note that the pull request had as many automatic
// rounds as it may.
func (x *Texts) CILimit(d AutoNote) (string, error) { return x.render(tmplCILimit, d) }

// CIFlaky renders the note that the failed checks passed when re-run.
func (x *Texts) CIFlaky(d AutoNote) (string, error) { return x.render(tmplCIFlaky, d) }
