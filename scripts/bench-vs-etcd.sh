#!/usr/bin/env bash
# Atoll and etcd side by side on this machine, in one run (`npm run bench:etcd`, which builds first).
#
# First checks every program it uses and names any that is missing; etcd and etcdctl (Debian's
# etcd-server and etcd-client) it installs with apt-get when run as root. Starts a three-member etcd
# cluster (default settings, so the WAL is fsynced) and a three-node Atoll cluster
# (dist/src/bin/atoll-server.js, default settings, fsync on), each on loopback with its own data
# directories under one temporary directory; every Atoll node also serves etcd's API
# (--etcd-listen, client port + 300). Then, for each workload and concurrency, it runs `atoll bench`
# against Atoll, `atoll bench --system etcd --label atoll-etcd` against Atoll's etcd port and
# `atoll bench --system etcd` against etcd (the same workload code and parameters in the same kind
# of Node.js process; etcd's API through the etcd3 npm client, the same client code for both) in
# turn, A B C A B C, and prints one table per workload with the three and the ratios atoll/etcd and
# atoll-etcd/etcd, then one line per workload, concurrency and ratio: `ratio put c=64
# atoll/etcd=2.31`, `ratio put c=64 atoll-etcd/etcd=0.60`. The server processes are sampled, so
# every row has the servers' CPU per operation (`server ms/op`, etcd's members included).
# Then the many-tenant sweep (issue 36): a fresh three-node Atoll cluster with authentication and
# one token per tenant; for each count N in --tenants, the put workload through etcd's client with
# the workers spread over N clients, each authenticated as a tenant of its own (so N etcd keyspaces,
# N buckets spread over partitions), against the same client count on etcd spread over N key
# prefixes (etcd has no tenants: one keyspace, so its figure is flat by design). One table with
# aggregate puts/s, p50 and p99 per N and system, then one line per N and system:
# `tenants put c=64 tenants=8 atoll-etcd ops/s=1480 p50=38.1 p99=120 vs-1=1.35`.
# Then the per-partition sweep (issue 18): the same put workload on fresh three-node Atoll
# clusters of 1, 64 and 1,024 partitions (`--sweep`), round by round, and one table with puts/s,
# the ratio to one partition and the server CPU per put, then one line per partition count:
# `sweep put c=64 partitions=64 ops/s=1573 vs-1-partition=0.77 server-ms/op=1.10`.
# With --sweep-ab FLAGS every partition count runs twice a round on fresh clusters, A without FLAGS
# and B with them (A B A B), and the table has a row per side with B/A: a server flag measured
# side by side, `npm run bench:etcd -- --sweep-only --sweep 64 --sweep-ab --coalesce-raft-messages`.
# Everything it started is stopped on exit, on failure and on Ctrl-C.
#
# Options (defaults in brackets):
#   --workloads LIST     put,get,stale-get,incr (also mixed, prefix, txn)  [put,get,stale-get,incr]
#   --concurrency LIST   requests in flight                                  [1,16,64,256]
#   --duration S         seconds measured per run, after the warm-up         [10]
#   --warmup S           seconds of unrecorded load before each run          [3]
#   --keys N             keys preloaded into each system                     [100000]
#   --value-size BYTES                                                       [128]
#   --rounds N           A B pairs per workload and concurrency              [2]
#   --results DIR        where the JSON results, tables and SVG go           [a new /tmp/atoll-vs-etcd-* dir]
#   --cpu-prof DIR       run the Atoll servers under `node --cpu-prof`, profiles into DIR
#   --sweep LIST         partition counts of the per-partition sweep; '' skips it [1,64,1024]
#   --sweep-concurrency N   the sweep's puts in flight                         [64]
#   --sweep-keys N       keys preloaded into each sweep cluster              [10000]
#   --sweep-only         only the sweep (no etcd, no side-by-side runs)
#   --sweep-ab FLAGS     the sweep runs A (without FLAGS) and B (with them) alternately, e.g.
#                        --coalesce-raft-messages; several flags as one quoted word
#   --atoll-flags FLAGS  extra atoll-server flags for every Atoll node this script starts
#   --tenants LIST       tenant counts of the many-tenant sweep; '' skips it    [1,8,64]
#   --tenants-concurrency N  the tenant sweep's puts in flight, spread over the tenants [64]
#   --tenants-only       only the many-tenant sweep (no side-by-side runs, no partition sweep)
# Environment: BENCH_ATOLL_PORT (27011: nodes at 27011-27013, their etcd API at 27311-27313),
# BENCH_ETCD_PORT (23791: clients at 23791-23793, peers at 23801-23803).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
workloads="put,get,stale-get,incr"
concurrency="1,16,64,256"
duration=10
warmup=3
keys=100000
value_size=128
rounds=2
results=""
cpu_prof=""
sweep="1,64,1024"
sweep_concurrency=64
sweep_keys=10000
sweep_only=0
sweep_ab=""
atoll_flags=""
tenants="1,8,64"
tenants_concurrency=64
tenants_only=0

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
  exit "${1:-0}"
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --workloads) workloads="$2"; shift 2 ;;
    --concurrency) concurrency="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --keys) keys="$2"; shift 2 ;;
    --value-size) value_size="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --results) results="$2"; shift 2 ;;
    --cpu-prof) cpu_prof="$2"; shift 2 ;;
    --sweep) sweep="$2"; shift 2 ;;
    --sweep-concurrency) sweep_concurrency="$2"; shift 2 ;;
    --sweep-keys) sweep_keys="$2"; shift 2 ;;
    --sweep-only) sweep_only=1; shift ;;
    --sweep-ab) [[ -n ${2:-} ]] || { echo "bench-vs-etcd: --sweep-ab needs the flags of side B" >&2; exit 2; }; sweep_ab="$2"; shift 2 ;;
    --atoll-flags) atoll_flags="$2"; shift 2 ;;
    --tenants) tenants="$2"; shift 2 ;;
    --tenants-concurrency) tenants_concurrency="$2"; shift 2 ;;
    --tenants-only) tenants_only=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "bench-vs-etcd: unknown option $1" >&2; usage 2 ;;
  esac
done

say() { echo "bench-vs-etcd: $*" >&2; }

# The tenant sweep's options, checked before anything starts.
if [[ -n $tenants ]]; then
  [[ $tenants =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { say "--tenants must be a comma-separated list of positive integers (or '' to skip), not '$tenants'"; exit 2; }
  [[ $tenants_concurrency =~ ^[1-9][0-9]*$ ]] || { say "--tenants-concurrency must be a positive integer, not '$tenants_concurrency'"; exit 2; }
  for n in ${tenants//,/ }; do
    [[ $n -le $tenants_concurrency ]] || { say "--tenants $n is more than --tenants-concurrency $tenants_concurrency: each tenant needs a worker"; exit 2; }
  done
fi
if [[ $tenants_only -eq 1 && -z $tenants ]]; then say "--tenants-only needs --tenants"; exit 2; fi
if [[ $tenants_only -eq 1 && $sweep_only -eq 1 ]]; then say "give --sweep-only or --tenants-only, not both"; exit 2; fi
# Server flags as words (no quoting inside them): every node gets atoll_flags_list, a sweep's B side
# sweep_ab_list as well; atoll_side_flags is what start_atoll adds for the cluster it starts.
read -r -a atoll_flags_list <<<"$atoll_flags"
read -r -a sweep_ab_list <<<"$sweep_ab"
if [[ -n $sweep_ab && ${#sweep_ab_list[@]} -eq 0 ]]; then say "--sweep-ab needs the flags of side B"; exit 2; fi
if [[ -n $sweep_ab && -z $sweep ]]; then say "--sweep-ab needs the sweep (--sweep is '')"; exit 2; fi
atoll_side_flags=()

atoll_base_port="${BENCH_ATOLL_PORT:-27011}"
etcd_base_port="${BENCH_ETCD_PORT:-23791}"
atoll_cli=(node "$root/dist/src/cli/atoll.js")
[[ -f "$root/dist/src/bin/atoll-server.js" ]] || { say "dist/ is missing: run npm run build (npm run bench:etcd does)"; exit 2; }

# ----------------------------------------------------------------------------- prerequisites
# Every program this script runs, checked before anything starts: a missing one is named at once
# rather than found out as a server that never becomes ready.
missing=()
for tool in node curl awk sed cut seq head tail date sleep mktemp nproc; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [[ ${#missing[@]} -gt 0 ]]; then say "missing programs: ${missing[*]}; install them and run again"; exit 2; fi

# etcd and etcdctl come in two Debian packages; either may be missing alone.
etcd_packages() {
  local packages=()
  command -v etcd >/dev/null 2>&1 || packages+=(etcd-server)
  command -v etcdctl >/dev/null 2>&1 || packages+=(etcd-client)
  echo "${packages[*]}"
}
etcd_missing_text() { # the programs and their packages, for a message
  local text=""
  command -v etcd >/dev/null 2>&1 || text="etcd (Debian package etcd-server)"
  command -v etcdctl >/dev/null 2>&1 || text+="${text:+ and }etcdctl (Debian package etcd-client)"
  echo "$text"
}
packages="$(etcd_packages)"
if [[ -n "$packages" ]]; then
  if [[ $(id -u) -ne 0 ]]; then say "missing $(etcd_missing_text); this is not root: apt-get install $packages"; exit 2; fi
  if ! command -v apt-get >/dev/null 2>&1; then say "missing $(etcd_missing_text), and apt-get is not available to install it"; exit 2; fi
  say "missing $(etcd_missing_text): installing $packages (apt-get)"
  # shellcheck disable=SC2086 # one word per package
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages >/dev/null; } \
    || true
  if [[ -n "$(etcd_packages)" ]]; then say "still missing $(etcd_missing_text) after apt-get install $packages"; exit 2; fi
fi
say "$(etcd --version | head -1), $(node --version), $(nproc) cores"

# ----------------------------------------------------------------------------- clean-up
work="$(mktemp -d "${TMPDIR:-/tmp}/atoll-vs-etcd-data.XXXXXX")"
results="${results:-$(mktemp -d "${TMPDIR:-/tmp}/atoll-vs-etcd-results.XXXXXX")}"
mkdir -p "$results/runs"
started_pids=()
bench_pid=""
failed_runs=0

cleanup() {
  local status=$?
  trap - EXIT
  trap '' INT TERM # A second Ctrl-C must not cut the clean-up short.
  if [[ -n $bench_pid ]]; then kill -TERM "$bench_pid" 2>/dev/null || true; fi
  if [[ ${#started_pids[@]} -gt 0 ]]; then
    say "stopping ${#started_pids[@]} server processes"
    kill -TERM "${started_pids[@]}" 2>/dev/null || true
    for _ in $(seq 1 100); do
      local alive=0
      for pid in "${started_pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
      [[ $alive -eq 0 ]] && break
      sleep 0.1
    done
    kill -KILL "${started_pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM

# Runs a bench process in the background and waits for it, so Ctrl-C reaches the trap at once.
run_bench() {
  "${atoll_cli[@]}" bench "$@" &
  bench_pid=$!
  local status=0
  wait "$bench_pid" || status=$?
  bench_pid=""
  return "$status"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_ready() { # name, seconds, command...: polls the command; fails fast when a server died
  local name="$1" seconds="$2"
  shift 2
  local deadline=$((SECONDS + seconds)) pid
  until "$@" >/dev/null 2>&1; do
    for pid in "${started_pids[@]}"; do
      kill -0 "$pid" 2>/dev/null || { say "a server (pid $pid) exited while $name was starting; the logs:"; tail -n 20 "$work"/*.log >&2 || true; exit 1; }
    done
    if [[ $SECONDS -ge $deadline ]]; then
      say "$name not ready after ${seconds}s; the logs:"
      tail -n 20 "$work"/*.log >&2 || true
      exit 1
    fi
    sleep 0.5
  done
  say "$name ready"
}

# ----------------------------------------------------------------------------- etcd cluster
etcd_endpoints=""
etcd_pids=()
start_etcd() {
  local etcd_cluster="" i client_port peer_port port
  for i in 1 2 3; do
    etcd_cluster+="${etcd_cluster:+,}e$i=http://127.0.0.1:$((etcd_base_port + 9 + i))"
    etcd_endpoints+="${etcd_endpoints:+,}127.0.0.1:$((etcd_base_port + i - 1))"
  done
  for i in 1 2 3; do
    client_port=$((etcd_base_port + i - 1))
    peer_port=$((etcd_base_port + 9 + i))
    for port in $client_port $peer_port; do port_in_use "$port" && { say "port $port is in use (set BENCH_ETCD_PORT)"; exit 2; }; done
    etcd --name "e$i" --data-dir "$work/etcd/e$i" \
      --listen-client-urls "http://127.0.0.1:$client_port" --advertise-client-urls "http://127.0.0.1:$client_port" \
      --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
      --initial-cluster "$etcd_cluster" --initial-cluster-token atoll-bench --initial-cluster-state new \
      >"$work/etcd-e$i.log" 2>&1 &
    started_pids+=($!)
    etcd_pids+=($!)
  done
  say "etcd: 3 members starting (clients $etcd_endpoints, pids ${etcd_pids[*]})"
}

# ----------------------------------------------------------------------------- Atoll cluster
atoll_endpoints=""
atoll_pids=()
node_flags=()
if [[ -n "$cpu_prof" ]]; then mkdir -p "$cpu_prof"; node_flags=(--cpu-prof --cpu-prof-dir "$cpu_prof"); fi
atoll_etcd_endpoints=""
atoll_token_args=()
# start_atoll DIR PARTITIONS [ADMIN_TOKEN_FILE]: a fresh three-node cluster in DIR (default
# settings, fsync on), each node also serving etcd's API at its client port + 300; with an admin
# token file, authentication is on (the etcd port then needs a tenant's token).
start_atoll() {
  local dir="$1" partitions="$2" admin_token_file="${3:-}" atoll_peers="" i port p auth_args=()
  atoll_endpoints=""
  atoll_etcd_endpoints=""
  atoll_pids=()
  atoll_token_args=()
  if [[ -n $admin_token_file ]]; then auth_args=(--admin-token-file "$admin_token_file"); atoll_token_args=(--token-file "$admin_token_file"); fi
  for i in 1 2 3; do
    port=$((atoll_base_port + i - 1))
    for p in $port $((port + 300)); do port_in_use "$p" && { say "port $p is in use (set BENCH_ATOLL_PORT)"; exit 2; }; done
    atoll_peers+="${atoll_peers:+,}$i=127.0.0.1:$port"
    atoll_endpoints+="${atoll_endpoints:+,}127.0.0.1:$port"
    atoll_etcd_endpoints+="${atoll_etcd_endpoints:+,}127.0.0.1:$((port + 300))"
  done
  # The nodes prove a shared peer secret to each other (docs/security.md, "Peers"): node 1 creates
  # the file at its first start, the others are started once it exists.
  mkdir -p "$dir"
  local peer_secret_file="$dir/peer-secret"
  for i in 1 2 3; do
    ATOLL_LOG_LEVEL=warn ATOLL_LOG_FORMAT=json node "${node_flags[@]}" "$root/dist/src/bin/atoll-server.js" \
      --id "$i" --peers "$atoll_peers" --partitions "$partitions" --data-dir "$dir/node$i" --peer-secret-file "$peer_secret_file" \
      --etcd-listen "127.0.0.1:$((atoll_base_port + 300 + i - 1))" "${auth_args[@]}" "${atoll_flags_list[@]}" "${atoll_side_flags[@]}" \
      >"$work/atoll-node$i.log" 2>&1 &
    started_pids+=($!)
    atoll_pids+=($!)
    if [[ $i == 1 ]]; then
      for _ in $(seq 1 100); do [[ -s $peer_secret_file ]] && break; sleep 0.1; done
      [[ -s $peer_secret_file ]] || { say "atoll node 1 did not create $peer_secret_file; its log:"; tail -n 20 "$work/atoll-node1.log" >&2 || true; exit 1; }
    fi
  done
  local flags_text="${atoll_flags_list[*]} ${atoll_side_flags[*]}"
  flags_text="${flags_text# }"
  flags_text="${flags_text% }"
  say "atoll: 3 nodes, $partitions partitions${flags_text:+, flags $flags_text}, starting (clients $atoll_endpoints, pids ${atoll_pids[*]})"
}
# stop_atoll: stops the cluster start_atoll started (SIGTERM, then SIGKILL after 10 s) and forgets it.
stop_atoll() {
  local pid remaining=() alive
  [[ ${#atoll_pids[@]} -gt 0 ]] || return 0
  kill -TERM "${atoll_pids[@]}" 2>/dev/null || true
  for _ in $(seq 1 100); do
    alive=0
    for pid in "${atoll_pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive -eq 0 ]] && break
    sleep 0.1
  done
  kill -KILL "${atoll_pids[@]}" 2>/dev/null || true
  for pid in "${atoll_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  for pid in "${started_pids[@]}"; do [[ " ${atoll_pids[*]} " == *" $pid "* ]] || remaining+=("$pid"); done
  started_pids=("${remaining[@]}")
  atoll_pids=()
}
atoll_ready() { # every node answers and knows a leader for every partition
  local endpoint
  for endpoint in ${atoll_endpoints//,/ }; do
    "${atoll_cli[@]}" --endpoints "$endpoint" "${atoll_token_args[@]}" --timeout 2000 --json cluster status \
      | node -e 'const s = JSON.parse(require("fs").readFileSync(0, "utf8")); process.exit(s.partitions.length > 0 && s.partitions.every((p) => p.leader !== 0) ? 0 : 1)' \
      || return 1
  done
}

endpoints_of() { case $1 in atoll) echo "$atoll_endpoints" ;; atoll-etcd) echo "$atoll_etcd_endpoints" ;; *) echo "$etcd_endpoints" ;; esac; }
pids_of() { local IFS=,; [[ $1 == atoll* ]] && echo "${atoll_pids[*]}" || echo "${etcd_pids[*]}"; }
# The bench's system options: Atoll's etcd port is measured with etcd's client, named atoll-etcd.
system_args() { case $1 in atoll) echo "--system atoll" ;; atoll-etcd) echo "--system etcd --label atoll-etcd" ;; *) echo "--system etcd" ;; esac; }
etcd_fsyncs() { # WAL fsyncs so far, summed over the members (from their Prometheus metrics)
  local total=0 endpoint count
  for endpoint in ${etcd_endpoints//,/ }; do
    count=$(curl -fsS "http://$endpoint/metrics" 2>/dev/null | awk '/^etcd_disk_wal_fsync_duration_seconds_count/ {print $2}') || count=0
    total=$((total + ${count:-0}))
  done
  echo "$total"
}

common=(--keys "$keys" --value-size "$value_size" --timeout 10000)

if [[ $sweep_only -eq 0 && $tenants_only -eq 0 ]]; then
  start_etcd
  start_atoll "$work/atoll" 64
  wait_ready "etcd" 60 etcdctl --endpoints "$etcd_endpoints" endpoint health
  wait_ready "atoll" 90 atoll_ready

  # --------------------------------------------------------------------------- preload
  for system in atoll atoll-etcd etcd; do
    say "$system: preloading $keys keys of $value_size bytes"
    # shellcheck disable=SC2046 # system_args is a list of words
    run_bench $(system_args "$system") --endpoints "$(endpoints_of "$system")" "${common[@]}" \
      --workloads "$workloads" --concurrency 1 --ops 1 --warmup 0 >"$results/preload-$system.txt"
  done

  # --------------------------------------------------------------------------- A B A B
  IFS=, read -r -a workload_list <<<"$workloads"
  IFS=, read -r -a concurrency_list <<<"$concurrency"
  total_runs=$(( ${#workload_list[@]} * ${#concurrency_list[@]} * rounds * 3 ))
  run=0
  for workload in "${workload_list[@]}"; do
    for c in "${concurrency_list[@]}"; do
      for round in $(seq 1 "$rounds"); do
        for system in atoll atoll-etcd etcd; do
          run=$((run + 1))
          say "[$run/$total_runs] $system $workload c=$c round $round/$rounds (load average $(cut -d' ' -f1-3 /proc/loadavg))"
          out="$results/runs/$workload-c$c-r$round-$system.json"
          if [[ $system == etcd ]]; then
            fsyncs_before=$(etcd_fsyncs)
            started_at=$(date +%s.%N)
          fi
          # shellcheck disable=SC2046 # system_args is a list of words
          if ! run_bench $(system_args "$system") --endpoints "$(endpoints_of "$system")" "${common[@]}" --no-preload \
            --workloads "$workload" --concurrency "$c" --duration "$duration" --warmup "$warmup" \
            --sample-pids "$(pids_of "$system")" --json >"$out"; then
            say "$system $workload c=$c round $round failed (see above); going on"
            failed_runs=$((failed_runs + 1))
          fi
          if [[ $system == etcd ]]; then
            rate=$(awk -v n="$(( $(etcd_fsyncs) - fsyncs_before ))" -v a="$started_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", n / (b - a) }')
            say "etcd WAL fsyncs ≈ $rate/s over the 3 members (warm-up included)"
          fi
        done
      done
    done
  done

  # --------------------------------------------------------------------------- results
  say "results in $results"
  node "$root/dist/src/bench/compare-cli.js" "$results/runs" --markdown "$results/comparison.md" --out "$results/latency.svg"
  stop_atoll
fi

# ----------------------------------------------------------------------------- many-tenant sweep
# Atoll through etcd's API with the workers spread over N tenants (N etcd keyspaces, N buckets
# spread over partitions) against etcd with the same workers spread over N key prefixes.
if [[ $sweep_only -eq 0 && -n $tenants ]]; then
  if [[ -z $etcd_endpoints ]]; then
    start_etcd
    wait_ready "etcd" 60 etcdctl --endpoints "$etcd_endpoints" endpoint health
  fi
  IFS=, read -r -a tenants_list <<<"$tenants"
  max_tenants=0
  for n in "${tenants_list[@]}"; do if [[ $n -gt $max_tenants ]]; then max_tenants=$n; fi; done
  mkdir -p "$work/tenants" "$results/tenants"
  admin_token_file="$work/tenants/admin-token"
  (umask 077 && "${atoll_cli[@]}" auth new-admin-token >"$admin_token_file")
  start_atoll "$work/tenants/atoll" 64 "$admin_token_file"
  wait_ready "atoll (authentication on)" 90 atoll_ready
  say "tenant sweep: creating $max_tenants tenants' tokens"
  node "$root/dist/src/bench/tenant-sweep-cli.js" tokens --endpoints "$atoll_endpoints" --admin-token-file "$admin_token_file" \
    --count "$max_tenants" --out "$work/tenants/passwords"
  for round in $(seq 1 "$rounds"); do
    for n in "${tenants_list[@]}"; do
      for system in atoll-etcd etcd; do
        say "tenant sweep: $system put c=$tenants_concurrency over $n tenant(s), round $round/$rounds (load average $(cut -d' ' -f1-3 /proc/loadavg))"
        password_args=()
        if [[ $system == atoll-etcd ]]; then password_args=(--etcd-password-file "$work/tenants/passwords"); fi
        # shellcheck disable=SC2046 # system_args is a list of words
        if ! run_bench $(system_args "$system") --endpoints "$(endpoints_of "$system")" --tenants "$n" "${password_args[@]}" \
          --keys "$sweep_keys" --value-size "$value_size" --timeout 10000 --no-preload \
          --workloads put --concurrency "$tenants_concurrency" --duration "$duration" --warmup "$warmup" \
          --sample-pids "$(pids_of "$system")" --json >"$results/tenants/n$n-r$round-$system.json"; then
          say "tenant sweep: $system over $n tenant(s), round $round failed (see above); going on"
          failed_runs=$((failed_runs + 1))
        fi
      done
    done
  done
  stop_atoll
  node "$root/dist/src/bench/tenant-sweep-cli.js" report "$results/tenants" --markdown "$results/tenants.md"
fi

# ----------------------------------------------------------------------------- per-partition sweep
# The same put workload on fresh clusters of each partition count (issue 18: no per-partition
# tax), round by round so that the machine's drift spreads over every count alike.
if [[ -n $sweep && $tenants_only -eq 0 ]]; then
  IFS=, read -r -a sweep_list <<<"$sweep"
  mkdir -p "$results/sweep"
  # One side without --sweep-ab ('-', files p<N>-r<round>.json), else A and B (p<N>-A-r<round>.json).
  sides=(-)
  if [[ -n $sweep_ab ]]; then sides=(A B); fi
  for round in $(seq 1 "$rounds"); do
    for partitions in "${sweep_list[@]}"; do
      for side in "${sides[@]}"; do
        name="p$partitions-r$round"
        atoll_side_flags=()
        if [[ $side != - ]]; then name="p$partitions-$side-r$round"; fi
        if [[ $side == B ]]; then atoll_side_flags=("${sweep_ab_list[@]}"); fi
        start_atoll "$work/sweep-$name" "$partitions"
        wait_ready "atoll ($partitions partitions)" 300 atoll_ready
        say "sweep: put c=$sweep_concurrency on $partitions partitions${sweep_ab:+, side $side}, round $round/$rounds (load average $(cut -d' ' -f1-3 /proc/loadavg))"
        if ! run_bench --endpoints "$atoll_endpoints" --keys "$sweep_keys" --value-size "$value_size" --timeout 10000 \
          --workloads put --concurrency "$sweep_concurrency" --duration "$duration" --warmup "$warmup" \
          --sample-pids "$(pids_of atoll)" --json >"$results/sweep/$name.json"; then
          say "sweep on $partitions partitions${sweep_ab:+, side $side}, round $round failed (see above); going on"
          failed_runs=$((failed_runs + 1))
        fi
        stop_atoll
        atoll_side_flags=()
        rm -rf "$work/sweep-$name"
      done
    done
  done
  # Rounds merged as the comparison merges them: operations and seconds summed, CPU weighted by time.
  node - "$results/sweep" "$sweep" "$sweep_concurrency" "$results/sweep.md" "$sweep_ab" <<'NODE'
const fs = require('node:fs');
const [dir, list, concurrency, markdown, ab] = process.argv.slice(2);
const sides = ab ? ['A', 'B'] : ['-'];
const rows = [];
const perRun = [];
for (const partitions of list.split(',')) {
  for (const side of sides) {
    const prefix = side === '-' ? `p${partitions}-r` : `p${partitions}-${side}-r`;
    let operations = 0, seconds = 0, cpuSeconds = 0, load = 0, p50 = 0, p99 = 0, runs = 0;
    for (const file of fs.readdirSync(dir).filter((f) => f.startsWith(prefix))) {
      let report;
      try { report = JSON.parse(fs.readFileSync(`${dir}/${file}`, 'utf8')); } catch { continue; }
      for (const run of report.runs ?? []) {
        const cpu = (Object.values(run.serverCpuPercent ?? {}).reduce((a, b) => a + b, 0) / 100) * run.elapsedSeconds;
        operations += run.operations;
        seconds += run.elapsedSeconds;
        cpuSeconds += cpu;
        load += run.loadAverage1m;
        p50 += run.latencyMs.p50Ms;
        p99 += run.latencyMs.p99Ms;
        runs++;
        perRun.push({ partitions, side, round: Number(file.slice(prefix.length, -'.json'.length)), opsPerSecond: run.opsPerSecond, p50: run.latencyMs.p50Ms, p99: run.latencyMs.p99Ms, msPerOp: run.operations > 0 ? (cpu * 1000) / run.operations : NaN, load: run.loadAverage1m });
      }
    }
    if (runs === 0) { rows.push({ partitions, side, missing: true }); continue; }
    rows.push({ partitions, side, opsPerSecond: operations / seconds, msPerOp: operations > 0 ? (cpuSeconds * 1000) / operations : NaN, p50: p50 / runs, p99: p99 / runs, load: load / runs, runs });
  }
}
const f2 = (x) => x.toFixed(2);
const summary = [];
let lines;
if (!ab) {
  const base = rows.find((row) => !row.missing && row.opsPerSecond > 0)?.opsPerSecond;
  lines = [
    `| partitions | puts/s (c=${concurrency}) | vs ${rows[0]?.partitions ?? 1} partition(s) | server ms/op | load | runs |`,
    '| ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const row of rows) {
    if (row.missing) { lines.push(`| ${row.partitions} | failed | | | | 0 |`); continue; }
    const ratio = base ? row.opsPerSecond / base : NaN;
    lines.push(`| ${row.partitions} | ${Math.round(row.opsPerSecond).toLocaleString('en-US')} | ${f2(ratio)} | ${f2(row.msPerOp)} | ${row.load.toFixed(1)} | ${row.runs} |`);
    summary.push(`sweep put c=${concurrency} partitions=${row.partitions} ops/s=${Math.round(row.opsPerSecond)} vs-${rows[0].partitions}-partition=${f2(ratio)} server-ms/op=${f2(row.msPerOp)}`);
  }
} else {
  // A B: one row per side (rounds merged; p50 and p99 the mean of the runs'), then every run in order.
  lines = [
    `| partitions | side | puts/s (c=${concurrency}) | B/A | p50 ms | p99 ms | server ms/op | load | runs |`,
    '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const row of rows) {
    const label = row.side === 'A' ? 'A' : `B (${ab})`;
    if (row.missing) { lines.push(`| ${row.partitions} | ${label} | failed | | | | | | 0 |`); continue; }
    const a = rows.find((other) => other.partitions === row.partitions && other.side === 'A' && !other.missing);
    const ratio = a ? row.opsPerSecond / a.opsPerSecond : NaN;
    lines.push(`| ${row.partitions} | ${label} | ${Math.round(row.opsPerSecond).toLocaleString('en-US')} | ${f2(ratio)} | ${f2(row.p50)} | ${f2(row.p99)} | ${f2(row.msPerOp)} | ${row.load.toFixed(1)} | ${row.runs} |`);
    summary.push(`sweep-ab put c=${concurrency} partitions=${row.partitions} side=${row.side} ops/s=${Math.round(row.opsPerSecond)} vs-A=${f2(ratio)} p50=${f2(row.p50)} p99=${f2(row.p99)} server-ms/op=${f2(row.msPerOp)}`);
  }
  perRun.sort((x, y) => x.round - y.round || Number(x.partitions) - Number(y.partitions) || x.side.localeCompare(y.side));
  lines.push('', '| round | partitions | side | puts/s | p50 ms | p99 ms | server ms/op | load |', '| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |');
  for (const run of perRun) lines.push(`| ${run.round} | ${run.partitions} | ${run.side} | ${Math.round(run.opsPerSecond).toLocaleString('en-US')} | ${f2(run.p50)} | ${f2(run.p99)} | ${f2(run.msPerOp)} | ${run.load.toFixed(1)} |`);
}
const title = ab ? `### Per-partition sweep, A without and B with ${ab} (put, c=${concurrency}, fresh three-node Atoll clusters)` : `### Per-partition sweep (put, c=${concurrency}, fresh three-node Atoll clusters)`;
const text = `${title}\n\n${lines.join('\n')}\n`;
fs.writeFileSync(markdown, text);
process.stdout.write(`\n${text}\n${summary.join('\n')}\n`);
NODE
fi
if [[ $failed_runs -gt 0 ]]; then say "$failed_runs runs failed"; exit 1; fi
