// Package worker runs the queued jobs: the interactive tasks (acknowledgements,
// replies, stop, help) and the agent jobs that turn an issue or a review into
// commits and a pull request (DESIGN.md §1, §4, §5).
package worker
