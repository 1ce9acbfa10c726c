package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/agentfix/agentfix/agent"
	"github.com/agentfix/agentfix/budget"
	"github.com/agentfix/agentfix/internal/logattr"
)

// DefaultOutputAllowance is the reply length reserved for a model whose
// replies have no token limit the worker knows of (ModelPrice's
// MaxOutputTokens is 0). A longer reply costs more than was reserved;
// the budget counts it all the same and the worker logs it.
const DefaultOutputAllowance = 16384

// ModelPrice is what the budgets need to know of a model to bound the cost
// of one call before it is made.
type ModelPrice struct {
	// InputPerM is the highest price of an input token (the larger of the
	// input and cache-write prices), OutputPerM the price of an output
	// token, in USD per million tokens; zero for an unpriced model, whose
	// calls are bounded in tokens only.
	InputPerM, OutputPerM float64
	// MaxOutputTokens bounds a reply; 0 when the provider sets the bound,
	// and DefaultOutputAllowance is reserved.
	MaxOutputTokens int64
}

// spendMeter charges one agent run's model calls to its budgets (DESIGN.md
// §9): before each call it reserves an upper bound of the call's cost in
// the job's, the repository's and the installation's scope at once; after
// the call it settles the reservation with what the call cost; when the
// run ends it releases what is still held. A reservation the budgets
// refuse stops the run as limits_exceeded, so a change the agent made is
// autosubmitted. Its hooks belong to one run, whose loop calls them one at
// a time.
type spendMeter struct {
	b     *budget.Budget
	scope budget.Scope
	price ModelPrice
	log   *slog.Logger

	mu     sync.Mutex
	header *countingWriter // the trajectory, until the first step starts
	prompt int64           // upper bound, in tokens, of the next call's prompt
	held   *budget.Reservation
}

// newSpendMeter returns the meter of one run of a model priced p, charged
// to scope (Job set: the job's key, the same on every attempt of one
// trigger).
func newSpendMeter(b *budget.Budget, scope budget.Scope, p ModelPrice, log *slog.Logger) *spendMeter {
	if p.MaxOutputTokens <= 0 {
		p.MaxOutputTokens = DefaultOutputAllowance
	}
	return &spendMeter{b: b, scope: scope, price: p, log: log}
}

// trajectory wraps the writer the agent writes its trajectory to: the
// size of the header record (the system and task messages and the tool
// definitions, JSON-encoded) bounds the tokens of the first prompt, since
// a token is never less than a byte.
func (m *spendMeter) trajectory(w io.Writer) io.Writer {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.header = &countingWriter{w: w}
	return m.header
}

// hooks returns the agent hooks of the meter. Pass them last to
// agent.WithHooks, so no later hook can end a step after its reservation.
func (m *spendMeter) hooks() agent.Hooks {
	return agent.Hooks{OnStepStart: m.onStepStart, OnStepDone: m.onStepDone, OnRunDone: m.onRunDone}
}

func (m *spendMeter) onStepStart(ctx context.Context, s agent.StepStart) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.Step == 1 && m.header != nil {
		m.prompt = m.header.count()
	}
	call := budget.Call{InputTokens: m.prompt, MaxOutputTokens: m.price.MaxOutputTokens,
		InputPrice: m.price.InputPerM, OutputPrice: m.price.OutputPerM}
	res, err := m.b.Reserve(ctx, m.scope, call.Estimate())
	var over *budget.ExceededError
	if errors.As(err, &over) {
		return &agent.StopError{Status: agent.LimitsExceeded, Reason: over.Message()}
	}
	if err != nil {
		return fmt.Errorf("budget: %w", err)
	}
	m.held = res
	return nil
}

func (m *spendMeter) onStepDone(ctx context.Context, s agent.Step) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settle(ctx, budget.Amount{USD: s.CostUSD, Tokens: s.Usage.Total()})
	m.prompt = nextPrompt(m.prompt, s)
	return nil
}

func (m *spendMeter) onRunDone(ctx context.Context, _ agent.Result) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settle(ctx, budget.Amount{})
	return nil
}

// settle charges actual to the reservation held, if any. A failure is
// logged: the reservation then expires on its own.
func (m *spendMeter) settle(ctx context.Context, actual budget.Amount) {
	if m.held == nil {
		return
	}
	res := m.held
	m.held = nil
	st, err := res.Settle(ctx, actual)
	switch {
	case err != nil:
		m.log.Warn("settle the budget of a model call", logattr.CostUSD, actual.USD, logattr.Err, err)
	case st.Over != (budget.Amount{}):
		m.log.Warn(fmt.Sprintf("a model call cost more than reserved: %v USD, %d tokens over the estimate", st.Over.USD, st.Over.Tokens),
			logattr.CostUSD, actual.USD)
	case st.Expired:
		m.log.Warn("a model call's budget reservation expired before it was settled", logattr.CostUSD, actual.USD)
	}
}

// nextPrompt bounds the prompt of the call after step s: the prompt s
// sent (as the provider counted it, else the bound used for it), the
// reply, and every message the step added after the reply.
func nextPrompt(prev int64, s agent.Step) int64 {
	u := s.Usage
	prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	if prompt == 0 {
		prompt = prev
	}
	next := prompt + u.OutputTokens
	for i, msg := range s.Messages {
		if i == 0 && msg.Role == agent.RoleAssistant && u.OutputTokens > 0 {
			continue // counted as the reply's tokens
		}
		next += messageTokens(msg)
	}
	return next
}

// messageTokens bounds the tokens of a message: the bytes of its text and
// of its tool calls.
func messageTokens(msg agent.Message) int64 {
	n := budget.TextTokens(msg.Content) + budget.TextTokens(msg.ToolCallID)
	for _, c := range msg.ToolCalls {
		n += budget.TextTokens(c.ID) + budget.TextTokens(c.Name) + int64(len(c.Arguments))
	}
	return n
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer

	mu sync.Mutex
	n  int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.mu.Lock()
	c.n += int64(n)
	c.mu.Unlock()
	return n, err
}

func (c *countingWriter) count() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Flush flushes the wrapped writer when it buffers.
func (c *countingWriter) Flush() error {
	if f, ok := c.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}
