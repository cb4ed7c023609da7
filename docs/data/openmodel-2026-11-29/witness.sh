#!/bin/bash
# Natively, quiet host: our open model against h2load --rps on one REST server (core 0),
# both clients on core 1, interleaved twice. Built by lag.sh into /tmp/nat.
D=/tmp/nat; R=$(dirname "$0")
GOMAXPROCS=1 taskset -c 0 $D/rest --listen 127.0.0.1:18080 --metrics-listen 127.0.0.1:19080 >/dev/null 2>&1 & RP=$!
sleep 1
for i in 1 2; do
  taskset -c 1 $D/protobench load --target http://127.0.0.1:18080 --method GetUser --rate 1000 --connections 100 --duration 10s --warmup 2s --out $R/ours-$i.json 2>/dev/null
  python3 -c "import json; r=json.load(open('$R/ours-$i.json')); L=r['latency_ms']; print('ours   $i: mean %.3f p50 %.3f p99 %.3f max %.3f ms, %d requests' % (L['mean'],L['p50'],L['p99'],L['max'],r['requests']))"
  taskset -c 1 h2load --h1 -c 100 --rps 10 -D 10 http://127.0.0.1:18080/v1/users/42 > $R/h2load-$i.txt 2>&1
  echo "h2load $i: $(grep -E '^time for request' $R/h2load-$i.txt)"
done
kill $RP
