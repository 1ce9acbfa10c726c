package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
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
	h := newHarness(b)
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
