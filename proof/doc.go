// Package proof holds the pure decisions behind the evidence a pull
// request carries (issue 13): what a run of the test command showed, how
// the change's run compares with the base commit's, which of the change's
// tests are proven regression tests, what in the change weakens the tests,
// and whether the pull request opens ready or as a draft. It runs nothing
// and imports no project package: the worker runs the commands and passes
// their results in.
//
// # Reading runs
//
// Parse reads one run (Input: command, exit code, time-out, the captured
// output, which a head+tail cap may have cut, and JUnit XML reports) into a
// Run of per-test results: go test (plain, -v, -json, build failures,
// panics, time-outs, subtests), pytest (default, -v, -rA, -q, xdist,
// parametrised ids, collection errors), Jest and Vitest (default and
// verbose reporters, --json), cargo test (several test binaries, doc tests,
// compiler errors) and Maven Surefire or Gradle reports. The command picks
// the parser; a command that names no known tool (make test, npm test)
// lets the output's own marks pick it. Colours are removed, an elision line
// ("[... N bytes elided ...]", "… (N bytes elided) …") ends what the
// parser knew and drops the partial lines on its sides; a run with an
// elision, a time-out or an early stop is not Complete. When no parser
// applies, a Run holds only the exit code and the output's tail.
//
// # Comparing with the baseline
//
// Compare sets the change's run against the base commit's run of the same
// command: each failure is pre-existing (the base commit's run shows it
// failing, by name), new (that run shows it passing, or is complete
// without it, or passed as a whole) or unclear, and the outcome says
// whether the only failures are pre-existing. It never claims more than
// the runs show: with no per-test results it falls back on the exit codes,
// and a base commit that passes makes any failure of the change new.
//
// # Proving regression tests
//
// ChangedTests finds the tests a diff adds, edits and deletes; Classify
// says which files are test files (they are copied onto the base commit);
// RunOnly cuts a known test command down to them; Prove decides, from the
// runs on the base commit's code and on the change, which tests fail before
// and pass after. A test that does not build on the base commit because it
// calls what the change adds counts as failing before (see Prove).
//
// # Integrity and policy
//
// Guard flags deleted test files and tests, added skips, edits to existing
// tests (named only), changes to CI, lint, coverage and test runner
// configuration, and changes that narrow what the test command runs.
// Decide applies test_policy.regression (required, encouraged, off) and
// whether the task asked for test changes, and says ready or draft, and
// why.
package proof
