package webhook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// wrongSignature has the form of a signature but matches no body: what a
// client without the secret sends to get its body read.
var wrongSignature = "sha256=" + strings.Repeat("00", 32)

// answerWithin bounds the wait for an answer the edge owes a hand-made
// request; only a broken edge gets near it.
const answerWithin = 30 * time.Second

// handClient is one delivery sent by hand over its own TCP connection, so
// the test sets the pace of its body. Its headers ask for 100-continue:
// the edge's "100 Continue" says the handler has begun reading the body
// and booked its first buffer.
type handClient struct {
	conn    net.Conn
	br      *bufio.Reader
	chunked bool
}

// dial connects from the loopback address from ("" for any) and sends the
// headers of an issues delivery with id, declaring declared bytes (-1:
// chunked), signed sig. It waits for the edge's first answer: nil when the
// edge asks for the body, else the answer the edge gave at once. ctx ends
// the connection.
func (h *harness) dial(ctx context.Context, from, id string, declared int, sig string) (*handClient, *reply, error) {
	d := net.Dialer{}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	addr := h.http.Listener.Addr().String()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("dial %s from %s: %w", addr, from, err)
	}
	context.AfterFunc(ctx, func() { conn.Close() })
	var head strings.Builder
	fmt.Fprintf(&head, "POST /webhook HTTP/1.1\r\nHost: %s\r\nExpect: 100-continue\r\n", addr)
	for k, v := range headers("issues", id, sig) {
		fmt.Fprintf(&head, "%s: %s\r\n", k, v)
	}
	if declared < 0 {
		head.WriteString("Transfer-Encoding: chunked\r\n\r\n")
	} else {
		fmt.Fprintf(&head, "Content-Length: %d\r\n\r\n", declared)
	}
	c := &handClient{conn: conn, br: bufio.NewReader(conn), chunked: declared < 0}
	if _, err := io.WriteString(conn, head.String()); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("send headers: %w", err)
	}
	r, err := c.answer()
	switch {
	case err != nil:
		conn.Close()
		return nil, nil, err
	case r.code == http.StatusContinue:
		return c, nil, nil
	}
	conn.Close()
	return nil, &r, nil
}

// send writes p as body bytes (one chunk when chunked).
func (c *handClient) send(p []byte) error {
	if c.chunked {
		p = fmt.Appendf(nil, "%x\r\n%s\r\n", len(p), p)
	}
	_, err := c.conn.Write(p)
	return err
}

// trickle sends one byte of body every tick until a write fails or stop
// is closed.
func (c *handClient) trickle(stop <-chan struct{}, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if c.send([]byte(" ")) != nil {
				return
			}
		}
	}
}

// answer reads the edge's next answer (a 100 Continue included).
func (c *handClient) answer() (reply, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(answerWithin))
	resp, err := http.ReadResponse(c.br, nil)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return reply{}, fmt.Errorf("no answer within %s", answerWithin)
	}
	if err != nil {
		return reply{}, fmt.Errorf("read answer: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, fmt.Errorf("read answer body: %w", err)
	}
	r := reply{code: resp.StatusCode, raw: string(raw), retryAfter: resp.Header.Get("Retry-After")}
	_ = json.Unmarshal(raw, &r.body)
	return r, nil
}

// mustDial is dial for a request the edge must start reading.
func (h *harness) mustDial(t *testing.T, from, id string, declared int, sig string) *handClient {
	t.Helper()
	c, early, err := h.dial(t.Context(), from, id, declared, sig)
	if err != nil {
		t.Fatal(err)
	}
	if early != nil {
		t.Fatalf("delivery %s from %s: answered %d %s before its body, want 100 Continue", id, from, early.code, early.raw)
	}
	return c
}

// clientFrom returns an HTTP client whose connections come from the
// loopback address from.
func clientFrom(t *testing.T, from string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// padded returns a signed-ready issues payload that triggers a fix,
// padded with spaces to n bytes.
func padded(t *testing.T, n int) []byte {
	t.Helper()
	b := payload(t, "issues.labeled.json", set("label.name", "agent-fix"))
	if len(b) > n {
		t.Fatalf("payload is %d bytes, more than %d", len(b), n)
	}
	return append(b, bytes.Repeat([]byte(" "), n-len(b))...)
}

// errorOf returns the error message of a JSON error answer.
func errorOf(r reply) string {
	var msg struct{ Error string }
	_ = json.Unmarshal([]byte(r.raw), &msg)
	return msg.Error
}

// TestSlowBodyFlood: slow clients that declare 25 MiB or send chunked,
// trickle their bodies a byte at a time with a signature of the right
// form, and come back as soon as they are cut off, hold no more than their
// first buffers: every real delivery sent meanwhile is answered 202, and
// each slow client is cut off with 408.
func TestSlowBodyFlood(t *testing.T) {
	t.Parallel()
	h := newHarnessOpts(t, func(o *Options) { o.BodyTimeout = 2 * time.Second })
	ctx, stop := context.WithCancel(t.Context())
	defer stop()

	const slow = 4
	var (
		wg    sync.WaitGroup
		ready = make([]chan struct{}, slow) // closed when the edge reads the first body
		cut   = make([]chan struct{}, slow) // closed at the first 408
		errs  = make(chan error, slow)
	)
	for i := range slow {
		ready[i], cut[i] = make(chan struct{}), make(chan struct{})
		declared := MaxBodyBytes
		if i%2 == 1 {
			declared = -1
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each from its own address, so no client's share is what
			// bounds them.
			errs <- h.slowClient(ctx, fmt.Sprintf("127.0.0.%d", 11+i), fmt.Sprintf("d-slow-%d", i), declared, 10*time.Millisecond, ready[i], cut[i], nil)
		}()
	}
	for i := range slow {
		select {
		case <-ready[i]:
		case err := <-errs:
			t.Fatalf("slow client: %v", err)
		}
	}

	const senders, each = 4, 25
	other := payload(t, "issue_comment.created.json", body("/agent-fix"))
	failed := make(chan string, senders*each)
	var swg sync.WaitGroup
	for s := range senders {
		swg.Add(1)
		go func() {
			defer swg.Done()
			for n := range each {
				id := fmt.Sprintf("d-real-%d-%d", s, n)
				r, err := h.send(h.http.Client(), other, headers("issue_comment", id, sign([]byte(testSecret), other)))
				if err != nil || r.code != http.StatusAccepted {
					failed <- fmt.Sprintf("%s: %d %s %v", id, r.code, r.raw, err)
				}
			}
		}()
	}
	swg.Wait()
	close(failed)
	var bad []string
	for f := range failed {
		bad = append(bad, f)
	}
	if len(bad) > 0 {
		t.Errorf("%d of %d real deliveries during the flood were not answered 202; first: %s", len(bad), senders*each, bad[0])
	}

	timeout := time.After(answerWithin)
	for i := range slow {
		select {
		case <-cut[i]:
		case err := <-errs:
			t.Fatalf("slow client: %v", err)
		case <-timeout:
			t.Fatalf("slow client %d was not cut off within %s", i, answerWithin)
		}
	}
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("slow client: %v", err)
		}
	}
}

// slowClient sends, from the loopback address from, delivery id of
// declared bytes (-1: chunked) with a wrong signature, trickling its body
// a byte every tick, again and again until ctx ends; each connection must
// be cut off with 408. It closes ready when the edge first reads its body
// and cut at its first 408, and counts the 408s in cuts (when not nil).
func (h *harness) slowClient(ctx context.Context, from, id string, declared int, tick time.Duration, ready, cut chan struct{}, cuts *atomic.Int64) error {
	for first := true; ctx.Err() == nil; first = false {
		c, early, err := h.dial(ctx, from, id, declared, wrongSignature)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if early != nil {
			return fmt.Errorf("%s refused before its body: %d %s", id, early.code, early.raw)
		}
		if first {
			close(ready)
		}
		stopTrickle := make(chan struct{})
		go c.trickle(stopTrickle, tick)
		r, err := c.answer()
		close(stopTrickle)
		c.conn.Close()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		if r.code != http.StatusRequestTimeout {
			return fmt.Errorf("%s trickling: answered %d %s, want 408", id, r.code, r.raw)
		}
		if cuts != nil {
			cuts.Add(1)
		}
		if cut != nil {
			close(cut)
			cut = nil
		}
	}
	return nil
}

// TestSlowBodyCutOff: a body that stops arriving — declared or chunked,
// trickled a byte at a time — is answered 408 once its deadline passes,
// and what it booked is given back.
func TestSlowBodyCutOff(t *testing.T) {
	t.Parallel()
	h := newHarnessOpts(t, func(o *Options) { o.BodyTimeout = 100 * time.Millisecond })
	for _, tt := range []struct {
		name     string
		declared int
	}{
		{"declared 25 MiB", MaxBodyBytes},
		{"chunked", -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := h.mustDial(t, "", "d-cut", tt.declared, wrongSignature)
			stop := make(chan struct{})
			defer close(stop)
			go c.trickle(stop, 10*time.Millisecond)
			r, err := c.answer()
			if err != nil {
				t.Fatalf("slow body: %v (never cut off)", err)
			}
			if want := "body not received in time (100ms, plus 2s per MiB received)"; r.code != http.StatusRequestTimeout || errorOf(r) != want {
				t.Errorf("slow body: answered %d %s, want 408 %q", r.code, r.raw, want)
			}
			if all, _ := h.srv.inflight.inUse(""); all != 0 {
				t.Errorf("bytes booked after the answer = %d, want 0", all)
			}
		})
	}
}

// TestBodyBookedAsItArrives: a request that declares 25 MiB, or sends
// chunked, books only its first buffer until its bytes arrive.
func TestBodyBookedAsItArrives(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	const from = "127.0.0.2"
	declared := h.mustDial(t, from, "d-declared", MaxBodyBytes, wrongSignature)
	if err := declared.send([]byte("{}")); err != nil {
		t.Fatal(err)
	}
	if all, client := h.srv.inflight.inUse(from); all != firstChunk || client != firstChunk {
		t.Errorf("booked while a body of 25 MiB has begun: %d in all, %d by its client; want %d", all, client, firstChunk)
	}
	h.mustDial(t, from, "d-chunked", -1, wrongSignature)
	if all, client := h.srv.inflight.inUse(from); all != 2*firstChunk || client != 2*firstChunk {
		t.Errorf("booked with a chunked body begun too: %d in all, %d by its client; want %d", all, client, 2*firstChunk)
	}
}

// TestBodiesInFlightBounded: while one delivery holds the whole in-flight
// budget, another is refused with 503 and Retry-After; once the first is
// done, deliveries are accepted again and the held one is queued.
func TestBodiesInFlightBounded(t *testing.T) {
	t.Parallel()
	h := newHarnessOpts(t, func(o *Options) { o.MaxInflightBytes = firstChunk })
	held := padded(t, firstChunk)
	// Another client's: the budget, not its share, is what it fills.
	c := h.mustDial(t, "127.0.0.2", "d-held", len(held), sign([]byte(testSecret), held))

	other := payload(t, "issue_comment.created.json", body("/agent-fix"))
	got := h.deliver(t, "issue_comment", "d-other", other)
	if want := "too many deliveries in flight, try again"; got.code != http.StatusServiceUnavailable || errorOf(got) != want || got.retryAfter != "1" {
		t.Errorf("delivery while the budget is held: %d %s (Retry-After %q), want 503 %q with Retry-After 1", got.code, got.raw, got.retryAfter, want)
	}

	if err := c.send(held); err != nil {
		t.Fatal(err)
	}
	if got, err := c.answer(); err != nil || got.code != http.StatusAccepted || got.body.Status != "queued" {
		t.Errorf("held delivery: %d %s %v, want 202 queued", got.code, got.raw, err)
	}
	if got := h.deliver(t, "issue_comment", "d-other", other); got.code != http.StatusAccepted {
		t.Errorf("delivery after the held one: %d %s, want 202", got.code, got.raw)
	}
}

// TestClientShareBounded: one client holding its share of the budget is
// refused more (503, Retry-After) while another client's deliveries are
// read; once its bodies are done, it is served again.
func TestClientShareBounded(t *testing.T) {
	t.Parallel()
	h := newHarnessOpts(t, func(o *Options) { o.MaxClientInflightBytes = 2 * firstChunk })
	const greedy = "127.0.0.2"
	held := padded(t, firstChunk)
	var clients []*handClient
	for i := range 2 {
		clients = append(clients, h.mustDial(t, greedy, fmt.Sprintf("d-held-%d", i), len(held), sign([]byte(testSecret), held)))
	}

	other := payload(t, "issue_comment.created.json", body("/agent-fix"))
	sig := sign([]byte(testSecret), other)
	got := h.requestWith(t, clientFrom(t, greedy), other, headers("issue_comment", "d-greedy", sig))
	if want := "too many deliveries in flight from your address, try again"; got.code != http.StatusServiceUnavailable || errorOf(got) != want || got.retryAfter != "1" {
		t.Errorf("third delivery of the client holding its share: %d %s (Retry-After %q), want 503 %q with Retry-After 1", got.code, got.raw, got.retryAfter, want)
	}
	if got := h.requestWith(t, clientFrom(t, "127.0.0.3"), other, headers("issue_comment", "d-polite", sig)); got.code != http.StatusAccepted {
		t.Errorf("delivery of another client meanwhile: %d %s, want 202", got.code, got.raw)
	}

	for i, c := range clients {
		if err := c.send(held); err != nil {
			t.Fatal(err)
		}
		if got, err := c.answer(); err != nil || got.code != http.StatusAccepted {
			t.Errorf("held delivery %d: %d %s %v, want 202", i, got.code, got.raw, err)
		}
	}
	if got := h.requestWith(t, clientFrom(t, greedy), other, headers("issue_comment", "d-greedy", sig)); got.code != http.StatusAccepted {
		t.Errorf("delivery of the client once its bodies are done: %d %s, want 202", got.code, got.raw)
	}
}

// TestInflightGrow walks the bookings of three requests of two clients
// through the budget (100) and the client share (60).
func TestInflightGrow(t *testing.T) {
	t.Parallel()
	var observed []int64
	f := newInflight(100, 60, func(used int64) { observed = append(observed, used) })
	a1, a2, b := f.hold("a"), f.hold("a"), f.hold("b")
	for i, step := range []struct {
		h      *holding
		n      int64 // 0: release
		want   error
		used   int64
		byA    int64
		byB    int64
		reason string
	}{
		{a1, 50, nil, 50, 50, 0, "fits"},
		{a2, 20, errClientShare, 50, 50, 0, "a's share is 60"},
		{b, 50, nil, 100, 50, 50, "fills the budget"},
		{b, 10, errBudgetFull, 100, 50, 50, "the budget is 100"},
		{a1, 0, nil, 50, 0, 50, "release"},
		{b, 200, nil, 250, 0, 250, "b alone holds anything: it may grow past both bounds"},
		{a2, 1, errBudgetFull, 250, 0, 250, "over the budget"},
		{b, 0, nil, 0, 0, 0, "release"},
		{a2, 60, nil, 60, 60, 0, "a's whole share"},
		{a2, 0, nil, 0, 0, 0, "release"},
		{a2, 0, nil, 0, 0, 0, "release again: nothing"},
	} {
		var err error
		if step.n == 0 {
			step.h.release()
		} else {
			err = step.h.grow(step.n)
		}
		used, byA := f.inUse("a")
		_, byB := f.inUse("b")
		if !errors.Is(err, step.want) || used != step.used || byA != step.byA || byB != step.byB {
			t.Errorf("step %d (%s): err %v, used %d, a %d, b %d; want err %v, used %d, a %d, b %d",
				i, step.reason, err, used, byA, byB, step.want, step.used, step.byA, step.byB)
		}
	}
	if len(f.clients) != 0 {
		t.Errorf("clients after every release = %v, want none", f.clients)
	}
	if diff := cmp.Diff([]int64{50, 100, 50, 250, 0, 60, 0}, observed); diff != "" {
		t.Errorf("observed bytes in use (-want +got):\n%s", diff)
	}
}

// paced is a body that arrives size bytes per read and records, at each
// read, the bytes delivered before it, what its holding had booked and
// the deadline it was given.
type paced struct {
	data      []byte
	size      int
	h         *holding
	delivered []int
	booked    []int64
	deadlines []time.Time
	deadline  time.Time
}

func (p *paced) Read(b []byte) (int, error) {
	done := 0
	if len(p.delivered) > 0 {
		done = p.delivered[len(p.delivered)-1]
	}
	p.booked = append(p.booked, p.h.n)
	p.deadlines = append(p.deadlines, p.deadline)
	n := copy(b, p.data[done:min(len(p.data), done+p.size)])
	p.delivered = append(p.delivered, done+n)
	if done+n == len(p.data) {
		return n, io.EOF
	}
	return n, nil
}

// TestReadBody reads bodies delivered in small reads: each grows its
// buffer only as its bytes arrive (never more than twice what arrived, or
// the first chunk), books every growth, is refused past MaxBodyBytes or
// the budget, and is given a deadline that moves with the bytes received.
func TestReadBody(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := bodyClock{start: start, floor: 5 * time.Second, perMiB: 2 * time.Second}
	for _, tt := range []struct {
		name     string
		size     int   // of the body
		declared int64 // -1: chunked
		read     int   // bytes per read
		limit    int64 // of the budget; 0: unbounded
		booked   int64
		err      error
	}{
		{name: "empty", size: 0, declared: 0, read: 1, booked: 0},
		{name: "small, declared", size: 100, declared: 100, read: 7, booked: 100},
		{name: "first chunk, declared", size: firstChunk, declared: firstChunk, read: 1000, booked: firstChunk},
		{name: "one byte more, declared", size: firstChunk + 1, declared: firstChunk + 1, read: 1000, booked: firstChunk + 1},
		{name: "1 MiB declared, 4 KiB reads", size: 1 << 20, declared: 1 << 20, read: 4 << 10, booked: 1 << 20},
		{name: "small, chunked", size: 100, declared: -1, read: 7, booked: firstChunk},
		{name: "40 KiB chunked", size: 40 << 10, declared: -1, read: 4 << 10, booked: 64 << 10},
		{name: "the largest, chunked", size: MaxBodyBytes, declared: -1, read: 1 << 20, booked: MaxBodyBytes},
		{name: "too large, chunked", size: MaxBodyBytes + 1, declared: -1, read: 1 << 20, err: errTooLarge},
		{name: "past the budget", size: 40 << 10, declared: -1, read: 4 << 10, limit: 32 << 10, err: errBudgetFull},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newInflight(cmpOr(tt.limit, 1<<40), 1<<40, nil)
			other := f.hold("other")
			if tt.limit > 0 {
				_ = other.grow(1) // someone else holds a byte, so the bound holds
			}
			h := f.hold("client")
			data := bytes.Repeat([]byte("x"), tt.size)
			src := &paced{data: data, size: tt.read, h: h}
			got, err := readBody(src, tt.declared, h, clock, func(d time.Time) error { src.deadline = d; return nil })
			if !errors.Is(err, tt.err) {
				t.Fatalf("readBody: err %v, want %v", err, tt.err)
			}
			if err == nil && (!bytes.Equal(got, data) || h.n != tt.booked) {
				t.Errorf("readBody: %d bytes (equal %v), booked %d; want %d bytes, booked %d", len(got), bytes.Equal(got, data), h.n, tt.size, tt.booked)
			}
			for i, booked := range src.booked {
				before := 0
				if i > 0 {
					before = src.delivered[i-1]
				}
				if limit := max(firstChunk, 2*int64(before)); booked > limit {
					t.Fatalf("read %d: booked %d with %d bytes arrived, want at most %d", i, booked, before, limit)
				}
				if want := clock.at(before); !src.deadlines[i].Equal(want) {
					t.Fatalf("read %d: deadline %s with %d bytes arrived, want %s", i, src.deadlines[i], before, want)
				}
			}
		})
	}
}

func cmpOr(a, b int64) int64 {
	if a != 0 {
		return a
	}
	return b
}

func TestBodyClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	c := bodyClock{start: start, floor: 5 * time.Second, perMiB: 2 * time.Second}
	for _, tt := range []struct {
		received int
		want     time.Duration
	}{
		{0, 5 * time.Second},
		{512 << 10, 6 * time.Second},
		{1 << 20, 7 * time.Second},
		{MaxBodyBytes, 55 * time.Second},
	} {
		if got := c.at(tt.received).Sub(start); got != tt.want {
			t.Errorf("deadline after %d bytes = start + %s, want + %s", tt.received, got, tt.want)
		}
	}
}

func TestClientOf(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ addr, want string }{
		{"127.0.0.1:5000", "127.0.0.1"},
		{"10.1.2.3:1", "10.1.2.3"},
		{"[::ffff:10.1.2.3]:1", "10.1.2.3"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"not an address", "not an address"},
	} {
		if got := clientOf(tt.addr); got != tt.want {
			t.Errorf("clientOf(%q) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}
