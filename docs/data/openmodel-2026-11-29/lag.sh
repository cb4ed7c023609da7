#!/bin/bash
# Natively: is the open model's scheduling lag the Go GC's? REST server on core 0, generator on core 1.
set -e
cd /work/wt
D=/tmp/nat; mkdir -p $D
go build -o $D ./servers/rest ./servers/grpc ./cmd/protobench
GOMAXPROCS=1 taskset -c 0 $D/rest --listen 127.0.0.1:18080 --metrics-listen 127.0.0.1:19080 >/dev/null 2>&1 & RP=$!
GOMAXPROCS=1 taskset -c 0 $D/grpc --listen 127.0.0.1:18081 --metrics-listen 127.0.0.1:19081 >/dev/null 2>&1 & GP=$!
sleep 1
run() { # label env target rate conns
  local label=$1 envs=$2 target=$3 rate=$4 conns=$5
  env $envs taskset -c 1 $D/protobench load --target $target --method GetUser --rate $rate --connections $conns --duration 10s --warmup 2s --out - 2>/dev/null \
   | python3 -c "import json,sys; r=json.load(sys.stdin); L=r['latency_ms']; S=r.get('scheduler_lag_ms') or {}; print('$label', '$target', '$rate/s x $conns', 'p50 %.3f p99 %.3f max %.3f | lag p50 %.3f p99 %.3f max %.3f' % (L['p50'],L['p99'],L['max'],S.get('p50',0),S.get('p99',0),S.get('max',0)))"
}
for i in 1 2; do
for e in "GOGC=100" "GOGC=off" "GOMAXPROCS=2"; do
  run "$e" "$e" http://127.0.0.1:18080 1000 100
  run "$e" "$e" grpc://127.0.0.1:18081 4000 1
done
done
kill $RP $GP
