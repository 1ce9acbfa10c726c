package webhook

import (
	"errors"
	"io"
	"time"
)

// The deadline of a body (Options.BodyTimeout, Options.BodyTimeoutPerMiB):
// with these, a body of MaxBodyBytes sent at the slowest pace allowed takes
// 55 s, inside the 60 s a server's read and write timeouts commonly allow
// a whole request.
const (
	DefaultBodyTimeout       = 5 * time.Second
	DefaultBodyTimeoutPerMiB = 2 * time.Second
)

// firstChunk is the buffer a body starts with (less when it declares less);
// real deliveries are a few KiB, and each growth doubles the buffer.
const firstChunk = 16 << 10

// errTooLarge reports a body longer than MaxBodyBytes.
var errTooLarge = errors.New("body too large")

// bodyClock is the deadline of one body: floor after it started, plus
// perMiB for each MiB received so far, so a client that stops sending is
// cut off floor after the start, and one that keeps up a MiB per perMiB
// never is.
type bodyClock struct {
	start         time.Time
	floor, perMiB time.Duration
}

// at returns the deadline once received bytes have arrived.
func (c bodyClock) at(received int) time.Time {
	return c.start.Add(c.floor + time.Duration(float64(c.perMiB)*float64(received)/(1<<20)))
}

// readBody reads a body of declared bytes (-1 when unknown: then at most
// MaxBodyBytes) from src. Its buffer starts at firstChunk and doubles as
// the bytes fill it, each growth booked with h first, so a body holds
// memory for what it sent, not for what it declared (at most twice that,
// and at least the first chunk). Before each read, setDeadline is told
// clock's deadline for the bytes received so far. It returns errTooLarge,
// the booking's refusal, or src's error (a timeout once the deadline has
// passed).
func readBody(src io.Reader, declared int64, h *holding, clock bodyClock, setDeadline func(time.Time) error) ([]byte, error) {
	limit := int64(MaxBodyBytes)
	if declared >= 0 {
		limit = min(declared, limit)
	}
	var buf []byte
	var probe [1]byte
	for {
		if len(buf) == cap(buf) && int64(cap(buf)) < limit {
			n := min(max(2*int64(cap(buf)), firstChunk), limit)
			if err := h.grow(n - int64(cap(buf))); err != nil {
				return nil, err
			}
			grown := make([]byte, len(buf), n)
			copy(grown, buf)
			buf = grown
		}
		// A full buffer reads one byte more: a body of the declared
		// length ends there, and any byte of an undeclared one is one
		// too many.
		dst := buf[len(buf):cap(buf)]
		if len(dst) == 0 {
			dst = probe[:]
		}
		if err := setDeadline(clock.at(len(buf))); err != nil {
			return nil, err
		}
		n, err := src.Read(dst)
		if n > 0 && len(buf) == cap(buf) {
			return nil, errTooLarge
		}
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			return buf, nil
		case err != nil:
			return nil, err
		}
	}
}
