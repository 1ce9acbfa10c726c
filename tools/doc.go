// Package tools is the agent's world: it implements agent.Env with the
// three tools of DESIGN.md §7 — bash, str_replace_editor and submit — over
// a sandbox and a job's working copy from package workspace.
//
// bash runs each command in a fresh sandboxed shell in /workspace and
// refuses interactive programs, matched on whole words in command position;
// every observation of a command that ran ends with "[exit code N]", 0
// included, or the timeout. The tool descriptions state the command time
// limit and the output cap of the Options, and CommandLimits tells them to
// the agent's prompts.
// str_replace_editor follows SWE-agent's edit_anthropic semantics but keeps
// tabs, undoes any number of edits, and confines every path to the working
// copy with os.Root; it runs in the worker on the files the sandbox sees.
// submit is two-phase after SWE-agent's review_on_submit_m: a first call
// returns a review message with the full diff and the facts the harness
// checked itself (files changed, test files, new files, workflow files, the
// repository's test command); the call after the last review stage ends the
// run. The force path of SWE-agent (submit -f) is not a tool: the loop's
// autosubmission calls Env.Diff directly.
//
// Actions validates tool calls against the schemas (tool mode) or parses the
// one fenced bash block of a reply (text mode), returning *agent.FormatError
// for anything malformed. Every tool result is capped, head and tail, with
// the number of bytes left out. A directory's own instructions for agents
// (Options.NestedInstructions, its AGENTS.md) follow, once, the result of
// the first editor call on a path under it or bash command naming one.
package tools
