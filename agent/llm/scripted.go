package llm

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentfix/agentfix/agent"
)

// Turn is one scripted model call: its Reply, or its Err, or what Do
// returns when Do is set (Do sees the call's context, e.g. to cancel the run
// while the model "thinks").
type Turn struct {
	Reply agent.Reply
	Err   error
	Do    func(ctx context.Context, messages []agent.Message) (agent.Reply, error)
}

// Call is one recorded query of a Scripted model.
type Call struct {
	Messages []agent.Message
	Tools    []agent.ToolSpec
}

// Scripted is an agent.Model that answers from a list of turns, one per
// query, and records every query. After the last turn Query fails. It is
// safe for concurrent use.
type Scripted struct {
	name     string
	textMode bool
	mu       sync.Mutex
	turns    []Turn
	calls    []Call
}

// NewScripted returns a model named "scripted/NAME" that plays turns in
// order; textMode selects the text-mode prompts.
func NewScripted(name string, textMode bool, turns ...Turn) *Scripted {
	return &Scripted{name: "scripted/" + name, textMode: textMode, turns: turns}
}

// NewReplay returns a scripted model that replays a trajectory's replies
// (message, finish reason, usage and cost), named "replay/" and the
// recorded model. A recorded step whose query failed replays as an error.
func NewReplay(t agent.Trajectory) (*Scripted, error) {
	if len(t.Steps) == 0 {
		return nil, errors.New("replay: the trajectory has no steps")
	}
	s := &Scripted{name: "replay/" + t.Header.Model, textMode: t.Header.TextMode}
	for _, st := range t.Steps {
		if len(st.Messages) == 0 || st.Messages[0].Role != agent.RoleAssistant {
			s.turns = append(s.turns, Turn{Err: fmt.Errorf("replay: step %d recorded no reply", st.Step)})
			continue
		}
		s.turns = append(s.turns, Turn{Reply: agent.Reply{
			Message: st.Messages[0], FinishReason: st.FinishReason, Usage: st.Usage, CostUSD: st.CostUSD,
		}})
	}
	return s, nil
}

// Name returns "scripted/NAME" or "replay/PROVIDER/MODEL".
func (s *Scripted) Name() string { return s.name }

// TextMode reports whether the script is for text mode.
func (s *Scripted) TextMode() bool { return s.textMode }

// Query records the call and plays the next turn.
func (s *Scripted) Query(ctx context.Context, messages []agent.Message, tools []agent.ToolSpec) (agent.Reply, error) {
	if err := ctx.Err(); err != nil {
		return agent.Reply{}, err
	}
	s.mu.Lock()
	n := len(s.calls)
	s.calls = append(s.calls, Call{Messages: messages, Tools: tools})
	s.mu.Unlock()
	if n >= len(s.turns) {
		return agent.Reply{}, fmt.Errorf("%s: no reply left after %d", s.name, len(s.turns))
	}
	t := s.turns[n]
	if t.Do != nil {
		return t.Do(ctx, messages)
	}
	if t.Err != nil {
		return agent.Reply{}, t.Err
	}
	r := t.Reply
	if r.Message.Role == "" {
		r.Message.Role = agent.RoleAssistant
	}
	return r, nil
}

// Calls returns the recorded queries, in order.
func (s *Scripted) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

var _ agent.Model = (*Scripted)(nil)
