package webhook

import (
	"errors"
	"net/netip"
	"sync"
)

// DefaultMaxInflightBytes bounds the delivery bodies the edge holds at once:
// four of the largest GitHub sends. Real deliveries are a few KiB, so only
// a flood of large requests ever meets it.
const DefaultMaxInflightBytes = 4 * MaxBodyBytes

// defaultClientShares is how many clients can each hold their whole share
// at once when Options.MaxClientInflightBytes is 0: a client holds at most
// a quarter of the budget (with the defaults, one body of MaxBodyBytes).
const defaultClientShares = 4

// The refusals of a booking.
var (
	errBudgetFull  = errors.New("too many deliveries in flight, try again")
	errClientShare = errors.New("too many deliveries in flight from your address, try again")
)

// inflight accounts for the memory of the bodies being read and handled:
// the capacity of each body's buffer, booked as the buffer grows with the
// bytes that arrive (readBody), never as a request declares. The whole is
// bounded by limit, and what the requests of one client (clientOf) hold
// together by share.
type inflight struct {
	limit, share int64
	// observe, when set, is told the bytes in use after every change.
	observe func(used int64)

	mu      sync.Mutex
	used    int64
	clients map[string]int64 // bytes in use by client; no entry for 0
}

func newInflight(limit, share int64, observe func(int64)) *inflight {
	return &inflight{limit: limit, share: share, observe: observe, clients: map[string]int64{}}
}

// holding is what one request has booked.
type holding struct {
	f      *inflight
	client string
	n      int64
}

// hold starts the bookings of one request of client.
func (f *inflight) hold(client string) *holding {
	return &holding{f: f, client: client}
}

// grow books n more bytes for h. It refuses with errBudgetFull when the
// budget would be exceeded and with errClientShare when the client's share
// would; a request that is alone in holding anything (in the budget, or in
// its client's share) may grow past the bound, so a body larger than the
// bound is still read when nothing else is in flight.
func (h *holding) grow(n int64) error {
	f := h.f
	f.mu.Lock()
	defer f.mu.Unlock()
	client := f.clients[h.client]
	switch {
	case f.used+n > f.limit && f.used != h.n:
		return errBudgetFull
	case client+n > f.share && client != h.n:
		return errClientShare
	}
	f.used += n
	f.clients[h.client] = client + n
	h.n += n
	f.changed()
	return nil
}

// release gives back everything h booked; h may grow again afterwards.
func (h *holding) release() {
	if h.n == 0 {
		return
	}
	f := h.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.used -= h.n
	if left := f.clients[h.client] - h.n; left > 0 {
		f.clients[h.client] = left
	} else {
		delete(f.clients, h.client)
	}
	h.n = 0
	f.changed()
}

// changed reports the bytes in use; f.mu is held.
func (f *inflight) changed() {
	if f.observe != nil {
		f.observe(f.used)
	}
}

// inUse returns the bytes booked in all and by client.
func (f *inflight) inUse(client string) (all, byClient int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.used, f.clients[client]
}

// clientOf names the client of a request by its remote address as the
// server sees it ("host:port"; behind a proxy, the proxy's): an IPv4
// address, or an IPv6 address's /64, the block one host usually has. An
// address that does not parse is its own client.
func clientOf(remoteAddr string) string {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	addr := ap.Addr().Unmap()
	if addr.Is6() {
		p, _ := addr.WithZone("").Prefix(64)
		return p.String()
	}
	return addr.String()
}
