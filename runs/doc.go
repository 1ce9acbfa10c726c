// Package runs keeps the record of every agent run (DESIGN.md §5): its
// metadata (meta.json), the agent's trajectory (trajectory.jsonl) and the
// patch it produced (patch.diff), in AGENTFIX_DATA_DIR/runs/<run_id>/ on
// the worker that ran it, mirrored to Redis — gzip-compressed, expiring
// after the retention period — so any process (the admin viewer, the signed
// run page) can show any run.
//
// Run ids sort by time: a UTC timestamp, then a random suffix
// ("20250102T150405Z-1a2b3c4d").
//
// Redis layout: the hash agentfix:run:<run_id> with the fields meta (JSON),
// trajectory and patch (both gzip), and the sorted set agentfix:runs of run
// ids scored by their start time in Unix milliseconds, trimmed to the
// retention period.
//
// The package knows nothing of the agent or GitHub: the worker fills Meta
// and hands the trajectory writer to the agent.
package runs
