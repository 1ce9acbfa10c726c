#!/usr/bin/env bash
# bench-intake.sh — the webhook intake benchmark next to its reference: what
# this machine's redis-server does on its own (redis-benchmark), then
# BenchmarkIntake (real router, real redis-server, signed deliveries), then
# BenchmarkIntakeSlowFlood (the same while slow clients trickle bodies; their
# number is AGENTFIX_BENCH_SLOW, default 32). All run on the same machine,
# one after the other, so their ratios are meaningful.
# Usage: scripts/bench-intake.sh [deliveries]   (default 20000)
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-20000}"

echo "## machine"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "nproc: $(nproc)"
lscpu | head -n 15
go version
echo

dir="$(mktemp -d)"
pid=""
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$dir"
}
trap cleanup EXIT

# A throwaway redis-server on a free loopback port, no persistence.
for attempt in 1 2 3 4 5; do
	port=$((20000 + RANDOM % 20000))
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$dir" --maxmemory-policy noeviction --loglevel warning >"$dir/redis.log" 2>&1 &
	pid=$!
	for _ in $(seq 50); do
		if redis-cli -p "$port" ping >/dev/null 2>&1; then break 2; fi
		sleep 0.1
	done
	kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""
done
if [ -z "$pid" ]; then echo "could not start redis-server" >&2; exit 1; fi

echo "## reference: redis-benchmark -q -n 100000 -t set,lpush (port $port)"
# -q still draws progress lines with \r; keep the summaries only.
timeout 300 redis-benchmark -q -p "$port" -n 100000 -t set,lpush | tr '\r' '\n' | grep 'requests per second'
echo

echo "## BenchmarkIntake, BenchmarkIntakeSlowFlood ($n deliveries each)"
timeout 600 go test -run '^$' -bench '^BenchmarkIntake(SlowFlood)?$' -benchtime "${n}x" ./webhook/
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
