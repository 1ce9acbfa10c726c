// Package agent is the agent loop of DESIGN.md §6: an append-only history,
// limits checked before each model query, actions executed through an Env,
// and every way a run can end expressed as a typed error caught in one place.
//
// The package declares the interfaces it consumes (Model, Env) and knows
// nothing of GitHub, queues or sandboxes; package agent/llm implements Model
// and package tools implements Env.
package agent
