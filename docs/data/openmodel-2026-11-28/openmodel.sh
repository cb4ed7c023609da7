#!/bin/bash
# Issue 36: open-model latency on the event loops against the old library path, native and pinned.
B=/tmp/measure/bin; R=/tmp/measure/raw; mkdir -p $R
lat() { python3 -c "
import json,sys;d=json.load(open('$1'));l=d.get('latency_ms',{})
print('req=%d err=%d rps=%.0f p50=%.2f p99=%.2f mean=%.2f lag_p99=%s flags=%s'%(d['requests'],d['errors'],d.get('throughput_rps',0),l.get('p50',0),l.get('p99',0),l.get('mean',0),(d.get('scheduler_lag_ms') or {}).get('p99'),','.join(d.get('flags') or [])))"; }
GOMAXPROCS=1 taskset -c 0 $B/rest --listen 127.0.0.1:38080 --metrics-listen 127.0.0.1:38090 >$R/rest.log 2>&1 & S=$!; sleep 0.7
for c in 10 100; do
  for client in lean std; do
    taskset -c 1 $B/protobench load --target http://127.0.0.1:38080 --method GetUser --rate 1000 --connections $c --concurrency 1 --duration 10s --warmup 2s --http-client $client --out $R/rest-open-c$c-$client.json >/dev/null 2>&1
    echo "REST open 1000/s c=$c client=$client: $(lat $R/rest-open-c$c-$client.json)"
  done
  taskset -c 1 $B/protobench load --target http://127.0.0.1:38080 --method GetUser --connections $c --concurrency 1 --duration 10s --warmup 2s --out $R/rest-closed-c$c.json >/dev/null 2>&1
  echo "REST closed c=$c: $(lat $R/rest-closed-c$c.json)"
done
taskset -c 1 h2load --h1 -c 100 --rps 10 -D 10 http://127.0.0.1:38080/v1/users/42 > $R/rest-h2load.txt 2>&1
echo "REST h2load --h1 -c100 --rps 10: $(grep -E '^time for request' $R/rest-h2load.txt)"
kill $S; wait $S 2>/dev/null
GOMAXPROCS=1 taskset -c 0 $B/grpc --listen 127.0.0.1:38051 --metrics-listen 127.0.0.1:38091 >$R/grpc.log 2>&1 & S=$!; sleep 0.7
for client in lean grpc-go; do
  taskset -c 1 $B/protobench load --target grpc://127.0.0.1:38051 --method GetUser --rate 4000 --connections 1 --concurrency 100 --duration 10s --warmup 2s --grpc-client $client --out $R/grpc-open-$client.json >/dev/null 2>&1
  echo "gRPC open 4000/s 1x100 client=$client: $(lat $R/grpc-open-$client.json)"
done
taskset -c 1 h2load -c 1 -m 100 --rps 4000 -D 10 -d /tmp/measure/body-none.bin -H 'content-type: application/grpc' -H 'te: trailers' http://127.0.0.1:38051/protobench.v1.Bench/GetUser > $R/grpc-h2load.txt 2>&1
echo "gRPC h2load --rps 4000 -c1 -m100: $(grep -E '^time for request' $R/grpc-h2load.txt)"
kill $S; wait $S 2>/dev/null
