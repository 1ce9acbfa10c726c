package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
)

// BenchmarkIntake measures the whole edge — size check, signature, parse,
// routing, claim, enqueue of the fix and notice tasks — through the real
// router over loopback HTTP against a real redis-server, with signed
// issue_comment deliveries, each with its own delivery id and issue number.
// It reports deliveries/s and the p50/p99 latency seen by the sender.
// DESIGN.md §11's budget: ≥ 2,000 deliveries/s and p99 < 25 ms on 2 cores.
func BenchmarkIntake(b *testing.B) {
	benchIntake(b, newHarness(b))
}

// BenchmarkIntakeSlowFlood is BenchmarkIntake while slow clients hold
// connections open: AGENTFIX_BENCH_SLOW of them (default 32) from four
// loopback addresses, half declaring 25 MiB and half chunked, each with a
// signature of the right form that matches nothing, trickling its body a
// byte every 100 ms and coming back as soon as it is cut off (the edge's
// default deadline: 5 s plus 2 s per MiB). The flood is under way (every
// slow client's body is being read) before the clock starts. It reports
// the slow connections cut off with 408 during the run, and fails if any
// real delivery is not answered 202.
func BenchmarkIntakeSlowFlood(b *testing.B) {
	slow := 32
	if v := os.Getenv("AGENTFIX_BENCH_SLOW"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("AGENTFIX_BENCH_SLOW=%q: want a positive number", v)
		}
		slow = n
	}
	h := newHarness(b)
	ctx, stop := context.WithCancel(b.Context())
	var (
		wg   sync.WaitGroup
		cuts atomic.Int64
		errs = make(chan error, slow)
	)
	ready := make([]chan struct{}, slow)
	for i := range slow {
		ready[i] = make(chan struct{})
		declared := MaxBodyBytes
		if i%2 == 1 {
			declared = -1
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := fmt.Sprintf("127.0.0.%d", 11+i%4)
			errs <- h.slowClient(ctx, from, fmt.Sprintf("bench-slow-%d", i), declared, 100*time.Millisecond, ready[i], nil, &cuts)
		}()
	}
	defer func() {
		stop()
		wg.Wait()
	}()
	for i := range slow {
		select {
		case <-ready[i]:
		case err := <-errs:
			b.Fatalf("slow client: %v", err)
		}
	}
	before := cuts.Load()
	benchIntake(b, h)
	b.ReportMetric(float64(cuts.Load()-before), "slow-cut-offs")
	select {
	case err := <-errs:
		b.Fatalf("slow client: %v", err)
	default:
	}
}

// benchIntake sends b.N signed deliveries to h from 4 senders and reports
// deliveries/s and the p50/p99 latency.
func benchIntake(b *testing.B, h *harness) {
	tmpl := payload(b, "issue_comment.created.json", body("/agent-fix please"), set("issue.number", 1000000000))
	marker := []byte(`"number":1000000000`)
	if bytes.Count(tmpl, marker) != 1 {
		b.Fatalf("issue number marker found %d times in the payload", bytes.Count(tmpl, marker))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var (
		seq       atomic.Int64
		failures  atomic.Int64
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, b.N)
	)
	b.SetParallelism(2) // 4 senders on 2 cores: more only add queueing delay, not throughput
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var local []time.Duration
		for pb.Next() {
			n := seq.Add(1)
			body := bytes.Replace(tmpl, marker, fmt.Appendf(nil, `"number":%d`, n), 1)
			req, _ := http.NewRequest(http.MethodPost, h.http.URL+"/webhook", bytes.NewReader(body))
			for k, v := range headers("issue_comment", fmt.Sprintf("bench-%d", n), sign([]byte(testSecret), body)) {
				req.Header.Set(k, v)
			}
			t0 := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				failures.Add(1)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			local = append(local, time.Since(t0))
			if resp.StatusCode != http.StatusAccepted {
				failures.Add(1)
			}
		}
		mu.Lock()
		latencies = append(latencies, local...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failures.Load(); f > 0 {
		b.Fatalf("%d of %d deliveries were not accepted", f, b.N)
	}
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchmarkDecode compares decoding the benchmark's 16 KB issue_comment
// payload into go-github's complete event type, as the edge once did, with
// the edge's small type holding only what routing reads.
func BenchmarkDecode(b *testing.B) {
	body := payload(b, "issue_comment.created.json", body("/agent-fix please"))
	b.Run("go-github", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := github.ParseWebHook("issue_comment", body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("small", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var ev issueCommentEvent
			if err := json.Unmarshal(body, &ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}
