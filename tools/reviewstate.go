package tools

// ReviewState is what the harness saw of the two-phase submission so far,
// for reports about the run (the pull request body): how far the review
// went and what the repository's test command said.
type ReviewState struct {
	// StagesShown counts the review messages the agent got; Stages is how
	// many there are before a submission goes through.
	StagesShown, Stages int
	// LastTest is the latest result of the repository's test command (run
	// with each review message); nil when none is configured or no review
	// message was shown yet.
	LastTest *TestResult
	// Verdict is the evidence of the latest review when a Verifier ran
	// the tests; nil otherwise.
	Verdict *Verdict
	// TestedDiff is the diff LastTest ran on: when it equals the final
	// patch, the test result is that of the submitted change.
	TestedDiff string
	// Summary is the latest summary given to submit.
	Summary string
}

// ReviewState returns the state of the submission. It is safe to call
// while the agent runs and after.
func (e *Env) ReviewState() ReviewState {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := ReviewState{StagesShown: e.stage, Stages: len(e.stages), TestedDiff: e.testedDiff, Summary: e.summary}
	if e.lastTest != nil {
		t := *e.lastTest
		s.LastTest = &t
	}
	if e.lastVerdict != nil {
		v := *e.lastVerdict
		s.Verdict = &v
	}
	return s
}
