// Package agent is the agent loop of DESIGN.md §6: an append-only history,
// limits checked before each model query, actions executed through an Env,
// and every way a run can end expressed as a typed error caught in one place.
//
// The package declares the interfaces it consumes (Model, Env) and knows
// nothing of GitHub, queues or sandboxes; package agent/llm implements Model
// and package tools implements Env.
//
// A run:
//
//	a, err := agent.New(model, env,
//		agent.WithConfig(cfg),                 // limits (DefaultConfig: 75 steps, $3, 45m)
//		agent.WithTrajectory(file),            // JSONL, one record per step
//		agent.WithHooks(agent.Hooks{...}),     // progress, budgets, stop
//		agent.WithRunID(runID), agent.WithLogger(log))
//	res, err := a.Run(ctx, agent.Task{...})  // res.Status, res.Reason, res.Patch, res.Summary
//
// A step is one model query and what follows from it: the reply's actions
// run in order (one observation message each), or, for a malformed or
// truncated reply, a prompt asking again. Both kinds of unusable reply
// count toward MaxFormatErrors in a row, and every step counts toward the
// step, cost, time and token limits. The model and the Env work under a
// deadline at the end of the time limit, so a model call or a command that
// hangs ends the run on time (limits_exceeded). The system prompt states
// the step and time limits (and the Env's command limits, CommandLimits);
// a harness note after a step's last observation says when 80% of the
// steps or of the time are used, and when the same action gave the same
// observation RepeatNote times in a row; RepeatStop times end the run as
// stuck. When a limit, a stuck model or an error ends the run, a non-empty
// diff is autosubmitted (status autosubmitted, the cause kept in Reason and
// Cause); a cancelled context or a hook's StopError with status cancelled
// ends it without a diff.
//
// The trajectory (see ReadTrajectory) is a header, one record per step
// appended as the step ends, and a result record; the viewer and
// `bot fix --replay` (agent/llm's NewReplay) read it back.
package agent
