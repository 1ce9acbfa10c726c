package workspace

import (
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// link models a network path for the throttled benchmark: in each
// direction, bytes leave at most at bandwidth (bytes per second) and arrive
// delay after they left (half the round-trip time). It is an ideal link: no
// loss, no TCP slow start, and a buffer deep enough that the sender is
// never held back, so a transfer takes its size over the bandwidth plus the
// round trips its protocol needs.
type link struct {
	bandwidth float64
	delay     time.Duration
}

// throttle starts a TCP proxy on loopback that forwards every connection
// to the host of rawURL through l, and returns rawURL with the proxy as its
// host. The proxy and its connections end with the benchmark.
func throttle(b *testing.B, rawURL string, l link) string {
	b.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	b.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	target := u.Host
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, client, server)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				var both sync.WaitGroup
				both.Add(2)
				go func() { defer both.Done(); l.carry(server, client) }()
				go func() { defer both.Done(); l.carry(client, server) }()
				both.Wait()
				client.Close()
				server.Close()
			}()
		}
	}()
	u.Host = ln.Addr().String()
	return u.String()
}

// chunk is what one read from a connection got, and when.
type chunk struct {
	data []byte
	at   time.Time
}

// carry copies src to dst through the link until src ends, then closes
// dst for writing. When dst fails, it closes src so that both ends stop.
func (l link) carry(dst, src net.Conn) {
	chunks := make(chan chunk, 4096)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 16<<10)
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{data: buf[:n], at: time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	var free time.Time // when the link has sent everything before
	for c := range chunks {
		start := c.at
		if free.After(start) {
			start = free
		}
		free = start.Add(time.Duration(float64(len(c.data)) / l.bandwidth * float64(time.Second)))
		time.Sleep(time.Until(free.Add(l.delay)))
		if _, err := dst.Write(c.data); err != nil {
			src.Close()
			for range chunks {
			}
			return
		}
	}
	dst.(*net.TCPConn).CloseWrite()
}
