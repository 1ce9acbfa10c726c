// Package llm implements agent.Model: an OpenAI-compatible provider (the
// official openai-go SDK's chat-completions and models services, so vLLM,
// Ollama and llama.cpp servers work through a base URL), Anthropic (the
// official anthropic-sdk-go's messages and models services, with prompt
// caching on the last messages), and a scripted model for tests and
// replays. Only the services the agent calls are built, not the SDKs'
// whole clients, whose other services would make the binary larger.
//
// New maps a configured name "provider/model" to a *Model; a name missing
// from the price table is refused with the closest priced names. Every
// provider model retries transient failures itself (429, 5xx, connection
// errors, a 200 answer without a reply; honouring Retry-After) with an
// injectable sleep, but never waits past its context's deadline (the run's
// time limit), which also caps each request. It never retries a request
// the provider refused (400, 404), reports a refused key (401, 403) as an
// *AuthError wrapping agent.ErrModelAuth and logs it at ERROR, reports a
// prompt too long for the context window as agent.ErrContextExceeded, and
// prices each call from an embedded, dated price table (prices.json) that
// configuration can override. The SDKs' own retries are off, so there is
// one retry policy. Check makes the cheapest authenticated call (listing
// models), for a check at startup. Token usage is normalised:
// Usage.InputTokens counts the input billed at the full input price,
// without cache reads and cache writes.
//
// In text mode a model sends no tools: the agent's Env then parses the one
// fenced bash block of each reply (DESIGN.md §6).
package llm
