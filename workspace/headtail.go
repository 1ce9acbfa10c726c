package workspace

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// DefaultOutputLimit is the number of output bytes a command result keeps
// (half from the start, half from the end) when Options.OutputLimit is 0.
const DefaultOutputLimit = 32 << 10

// HeadTail is an io.Writer that keeps the first and the last bytes written
// to it, limit bytes in all, and counts the bytes it drops in between. It is
// safe for concurrent use.
type HeadTail struct {
	mu    sync.Mutex
	limit int
	head  []byte
	tail  []byte
	total int64
}

// NewHeadTail returns a HeadTail keeping at most limit bytes; a limit below
// 2 is raised to DefaultOutputLimit.
func NewHeadTail(limit int) *HeadTail {
	if limit < 2 {
		limit = DefaultOutputLimit
	}
	return &HeadTail{limit: limit}
}

// Write keeps what fits in the head and the most recent bytes in the tail.
// It never fails.
func (h *HeadTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p)
	h.total += int64(n)
	headCap := h.limit / 2
	if room := headCap - len(h.head); room > 0 {
		take := min(room, len(p))
		h.head = append(h.head, p[:take]...)
		p = p[take:]
	}
	tailCap := h.limit - headCap
	if len(p) >= tailCap {
		h.tail = append(h.tail[:0], p[len(p)-tailCap:]...)
		return n, nil
	}
	if over := len(h.tail) + len(p) - tailCap; over > 0 {
		h.tail = append(h.tail[:0], h.tail[over:]...)
	}
	h.tail = append(h.tail, p...)
	return n, nil
}

// Total is the number of bytes written.
func (h *HeadTail) Total() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}

// Elided is the number of bytes String leaves out.
func (h *HeadTail) Elided() int64 {
	_, elided := h.render()
	return elided
}

// String returns the kept bytes; when bytes were dropped, a line in the
// middle says how many. Cuts fall on UTF-8 character boundaries.
func (h *HeadTail) String() string {
	s, _ := h.render()
	return s
}

func (h *HeadTail) render() (string, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	kept := int64(len(h.head) + len(h.tail))
	if h.total == kept {
		return string(h.head) + string(h.tail), 0
	}
	head := h.head
	if r := lastRuneStart(head); !utf8.FullRune(r) {
		head = head[:len(head)-len(r)]
	}
	tail := h.tail
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	elided := h.total - int64(len(head)+len(tail))
	return fmt.Sprintf("%s\n\n[... %d bytes elided ...]\n\n%s", head, elided, tail), elided
}

// lastRuneStart returns the suffix of b that starts at its last rune start
// byte, looking back at most utf8.UTFMax bytes; nil when there is none.
func lastRuneStart(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return nil
}

// Clip returns s cut to limit bytes with HeadTail's head+tail rule.
func Clip(s string, limit int) string {
	h := NewHeadTail(limit)
	h.Write([]byte(s))
	return h.String()
}
