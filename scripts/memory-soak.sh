#!/usr/bin/env bash
# Memory of a local three-node cluster under load (issue 18; docs/performance.md, "Memory").
# Usage: scripts/memory-soak.sh CHECKOUT [MINUTES] [BASE_PORT] [EVERY_S]
# Starts CHECKOUT's dist (build it first) with scripts/start-cluster.mjs (64 partitions unless
# ATOLL_PARTITIONS says otherwise) in a fresh data directory, runs
#   atoll bench --workloads mixed --concurrency 32 --keys 50000 --duration MINUTES*60
# against it, and every EVERY_S seconds prints one line: the time, each node's RSS, node 1's V8
# heap (used / total) and its memory gauges (atoll_memory_<consumer>_bytes), all in MB. The
# environment passes through to the servers, so MALLOC_ARENA_MAX=2 or NODE_OPTIONS may be tried.
# Ends with the bench's own table. Every wait is bounded; Ctrl-C stops the cluster.
set -u
root=$(cd "$1" && pwd); minutes=${2:-20}; port=${3:-8201}; every=${4:-60}
data=$(mktemp -d /tmp/memory-soak.XXXXXX)
log="$data/cluster.log"
ATOLL_DATA="$data" ATOLL_BASE_PORT=$port node "$root/scripts/start-cluster.mjs" >"$log" 2>&1 &
launcher=$!
stop() { kill -INT "$launcher" 2>/dev/null; wait "$launcher" 2>/dev/null; rm -rf "$data"; }
trap 'stop; exit 130' INT TERM
for _ in $(seq 1 1200); do grep -q 'cluster ready\|not ready\|exited' "$log" && break; sleep 0.1; done
if ! grep -q 'cluster ready' "$log"; then echo "memory-soak: the cluster did not start:"; tail -5 "$log"; stop; exit 1; fi
pids=$(for n in 1 2 3; do pgrep -f "$data/node$n " | head -1; done | tr '\n' ' ')
admin=$(grep -o 'admin http://[0-9.:]*' "$log" | head -1 | sed 's/admin //')
mb() { awk -v b="$1" 'BEGIN{printf "%.1f", b/1048576}'; }
sample() {
  local rss="" m
  for p in $pids; do rss="$rss$(awk '/^VmRSS/{printf "%.0f", $2/1024}' "/proc/$p/status" 2>/dev/null)/"; done
  m=$(curl -s --max-time 5 "$admin/metrics")
  g() { echo "$m" | awk -v n="$1" '$1==n{print $2; exit}'; }
  echo "$(date -u +%H:%M:%S) rss MB ${rss%/} heap $(mb "$(g nodejs_heap_size_used_bytes)")/$(mb "$(g nodejs_heap_size_total_bytes)") cache $(mb "$(g atoll_memory_version_cache_bytes)") keys $(mb "$(g atoll_memory_key_index_bytes)") raftlog $(mb "$(g atoll_memory_raft_log_bytes)") leveldb $(mb "$(g atoll_memory_leveldb_bytes)") dedup $(mb "$(g atoll_memory_dedup_bytes)") writebehind $(mb "$(g atoll_memory_write_behind_bytes)")"
}
echo "memory-soak: $(grep -o 'cluster ready ([^)]*)' "$log"), pids $pids, ${minutes} min of mixed c=32 over 50,000 keys; env MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-unset} NODE_OPTIONS=${NODE_OPTIONS:-unset}"
sample
endpoints="127.0.0.1:$port,127.0.0.1:$((port + 1)),127.0.0.1:$((port + 2))"
node "$root/dist/src/cli/atoll.js" bench --endpoints "$endpoints" --workloads mixed --concurrency 32 --keys 50000 \
  --duration $((minutes * 60)) --warmup 0 >"$data/bench.out" 2>&1 &
bench=$!
while kill -0 "$bench" 2>/dev/null; do
  for _ in $(seq 1 "$every"); do kill -0 "$bench" 2>/dev/null || break; sleep 1; done
  sample
done
wait "$bench"
tail -4 "$data/bench.out"
stop
