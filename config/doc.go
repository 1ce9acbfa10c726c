// Package config loads and validates the operator's configuration of the
// bot (DESIGN.md §3) and a repository's own configuration (RepoFile).
//
// Values come, in rising precedence, from built-in defaults, a YAML file
// (snake_case keys; unknown keys and secrets are errors), a .env file in the
// working directory, and the process environment. Every scalar key has an
// environment variable AGENTFIX_<KEY> (upper case); the provider credentials
// keep the names their SDKs use (OPENAI_API_KEY, …). Maps such as the price
// table are YAML only. The .env format is the one docker compose and
// godotenv share, without variable expansion (see parseDotEnv).
//
// Loading takes its inputs explicitly — the YAML path, the environment as a
// list of KEY=value strings and the working directory — so it never reads the
// process environment behind the caller's back and tests stay hermetic.
//
// Messages are written for the person who fixes them, all in one voice,
// and every problem is reported at once, never only the first:
//
//	agentfix.yml:3:1: max_step: unknown key; did you mean max_steps?
//	agentfix.yml:4:15: max_duration: must be a duration such as 45m or 1h30m, got the number 45 (give a unit, like 45m)
//	/srv/bot/.env:7: expected KEY=value; the line has no =
//	AGENTFIX_MAX_STEPS: must be a whole number, got "lots"
//	AGENTFIX_MAX_STEPS: must be at least 1, got 0 (from max_steps at agentfix.yml:3)
//	.github/agent-fix.yml:2: tset: unknown key; did you mean test?
//
// A problem in a file starts with the file, the line (and, in the
// operator's YAML file, the column) and the key as written there; one in
// the environment starts with the variable. An unknown key or AGENTFIX_*
// variable gets the closest known name (see suggest), a value of the wrong
// type the expected type in words, and no message quotes a secret.
package config
