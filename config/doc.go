// Package config loads and validates the operator's configuration of the
// bot (DESIGN.md §3).
//
// Values come, in rising precedence, from built-in defaults, a YAML file
// (snake_case keys; unknown keys and secrets are errors), a .env file in the
// working directory, and the process environment. Every scalar key has an
// environment variable AGENTFIX_<KEY> (upper case); the provider credentials
// keep the names their SDKs use (OPENAI_API_KEY, …). Maps such as the price
// table are YAML only.
//
// Loading takes its inputs explicitly — the YAML path, the environment as a
// list of KEY=value strings and the working directory — so it never reads the
// process environment behind the caller's back and tests stay hermetic.
package config
