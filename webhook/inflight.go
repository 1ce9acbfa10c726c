package webhook

import "sync"

// DefaultMaxInflightBytes bounds the delivery bodies the edge holds at once:
// four of the largest GitHub sends. Real deliveries are a few KiB, so only
// a flood of large requests ever meets it.
const DefaultMaxInflightBytes = 4 * MaxBodyBytes

// inflight accounts for the bodies being read and handled. A request
// reserves its declared length (MaxBodyBytes when it declares none) before
// its body is read, and is refused when the reservation does not fit.
type inflight struct {
	mu    sync.Mutex
	limit int64
	used  int64
}

// reserve books room for a body of the declared length (-1 when unknown)
// and returns the function that gives it back. A body larger than the whole
// budget is let through when nothing else is in flight, so no valid
// delivery is refused for ever.
func (f *inflight) reserve(declared int64) (release func(), ok bool) {
	n := declared
	if n < 0 || n > MaxBodyBytes {
		n = MaxBodyBytes
	}
	n = min(n, f.limit)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.used+n > f.limit {
		return nil, false
	}
	f.used += n
	return func() {
		f.mu.Lock()
		f.used -= n
		f.mu.Unlock()
	}, true
}
