#!/usr/bin/env bash
# Idle CPU and ready time of a local three-node cluster (issue 18; docs/performance.md).
# Usage: scripts/idle-cost.sh CHECKOUT PARTITIONS [BASE_PORT] [WAIT_S] [SAMPLE_S] [PROFILE_DIR]
# Starts CHECKOUT's dist (build it first) with scripts/start-cluster.mjs in a fresh data directory,
# prints the ready time, waits WAIT_S seconds, then prints each server's CPU (utime+stime from
# /proc/PID/stat) over SAMPLE_S seconds as % of a core with the main thread's wakeups per second,
# and the 1-minute load average. With PROFILE_DIR, the servers run under an inspector CPU profile
# (scripts/cpu-prof-hook.cjs: NODE_OPTIONS refuses --cpu-prof) written there on exit; read it with
# scripts/profile-top.mjs. CPU_PROF_FROM_MS restarts the profile that long after start.
set -u
root=$(cd "$1" && pwd); partitions=$2; port=${3:-7001}; wait_s=${4:-30}; sample_s=${5:-20}; prof=${6:-}
data=$(mktemp -d /tmp/idle-cost.XXXXXX)
opts=""
if [ -n "$prof" ]; then mkdir -p "$prof"; opts="--require $(cd "$(dirname "$0")" && pwd)/cpu-prof-hook.cjs"; export CPU_PROF_DIR="$prof"; fi
log="$data/cluster.log"
NODE_OPTIONS="$opts" ATOLL_DATA="$data" ATOLL_BASE_PORT=$port ATOLL_PARTITIONS=$partitions ATOLL_READY_TIMEOUT_MS=${READY_TIMEOUT_MS:-300000} \
  node "$root/scripts/start-cluster.mjs" >"$log" 2>&1 &
launcher=$!
for _ in $(seq 1 3100); do
  grep -q 'cluster ready\|not ready\|exited' "$log" && break
  sleep 0.1
done
ready=$(grep -o 'cluster ready ([^)]*)' "$log" | head -1); ready=${ready:-NOT READY}
pids=$(pgrep -f "$data/node" | tr '\n' ' ')
sleep "$wait_s"
tck=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
# Wakeups: the main thread's voluntary context switches (each idle timer or frame is one).
wakes() { awk '/^voluntary_ctxt_switches/{print $2}' "/proc/$1/task/$1/status"; }
declare -A before wakes0
for p in $pids; do before[$p]=$(cpu "$p"); wakes0[$p]=$(wakes "$p"); done
sleep "$sample_s"
out=""
for p in $pids; do
  after=$(cpu "$p")
  out="$out $(awk -v a="${before[$p]}" -v b="$after" -v t="$tck" -v s="$sample_s" -v w0="${wakes0[$p]}" -v w1="$(wakes "$p")" 'BEGIN{printf "%.2f%% (%d wakeups/s)", (b-a)/t/s*100, (w1-w0)/s}')"
done
load=$(cut -d' ' -f1 /proc/loadavg)
echo "$(date -u +%H:%M) $(basename "$root") P=$partitions $ready idle per node:$out load $load"
kill -INT "$launcher"
wait "$launcher" 2>/dev/null
[ -n "${KEEP:-}" ] && cp "$log" /tmp/idle-cost-last.log; rm -rf "$data"
