#!/usr/bin/env bash
# Puts through the etcd port of fresh local clusters of two checkouts, A B A B (docs/performance.md,
# "The key index of a large keyspace"). Usage: scripts/ab-etcd-puts.sh ROOT_A ROOT_B PORTBASE [ROUNDS] [DURATION_S]
# Each ROOT needs its dist/ built; each run starts scripts/start-cluster.mjs in a fresh data directory.
set -u
RA=$1; RB=$2; P=$3; R=${4:-2}; D=${5:-10}
for round in $(seq 1 $R); do
 for v in A B; do
  ROOT=$RA; [ $v = B ] && ROOT=$RB
  PORT=$((P + round*200 + (v == "B" ? 100 : 0) ))
  rm -rf /tmp/ab-etcd-puts-$PORT
  cd $ROOT
  ATOLL_DATA=/tmp/ab-etcd-puts-$PORT ATOLL_BASE_PORT=$PORT node scripts/start-cluster.mjs > /tmp/ab-etcd-puts-$PORT.log 2>&1 &
  CL=$!
  for i in $(seq 1 60); do grep -q "cluster ready" /tmp/ab-etcd-puts-$PORT.log && break; sleep 1; done
  PIDS=$(pgrep -f "dab-$PORT/node" | tr '\n' ',' | sed 's/,$//')
  E=$((PORT+300))
  echo -n "$v r$round: "
  node dist/src/cli/atoll.js bench --system etcd --endpoints 127.0.0.1:$E,127.0.0.1:$((E+1)),127.0.0.1:$((E+2)) --workloads put --concurrency 64 --duration $D --warmup 3 --sample-pids $PIDS 2>&1 | grep -E "^put " 
  kill -INT $CL; wait $CL 2>/dev/null; sleep 1
 done
done
