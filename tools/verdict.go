package tools

import (
	"context"

	"github.com/agentfix/agentfix/proof"
)

// Verifier runs the repository's test command on a change the way the
// pull request will hold it: outside the agent's sandbox, on a clean
// checkout of the base commit with the change applied, with a fresh HOME
// (package session implements it). A verdict so made cannot be forged by
// what the agent left in its own sandbox (caches, HOME, ignored files).
type Verifier interface {
	Verify(ctx context.Context, diff string) (Verdict, error)
}

// Verdict is what the harness found of a change by running its tests.
type Verdict struct {
	// Test is the change's run of the repository's test command.
	Test *TestResult `json:"test,omitempty"`
	// Baseline is the base commit's run of it, nil when it did not run.
	Baseline *TestResult `json:"baseline,omitempty"`
	// Comparison sets the change's run against the baseline: which
	// failures are pre-existing and which are new.
	Comparison *proof.Comparison `json:"comparison,omitempty"`
	// Proof is the regression proof of the change's tests: run on the base
	// commit's code (they must fail) and on the change (they must pass);
	// nil when none was attempted, and NoProof says why.
	Proof   *proof.Proof `json:"proof,omitempty"`
	NoProof string       `json:"no_proof,omitempty"`
	// Flags are what in the change weakens the tests (the integrity guard).
	Flags []proof.Flag `json:"flags,omitempty"`
}

// Regressions are the proven regression tests of v.
func (v Verdict) Regressions() []proof.Regression {
	if v.Proof == nil {
		return nil
	}
	return v.Proof.Proven
}
