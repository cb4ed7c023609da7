#!/bin/bash
# Native, pinned: server on core 0 (GOMAXPROCS 1), client on core 1. GetUser, 1 connection x 100 streams.
# Server CPU = utime+stime of the server process over the client's run (/proc/PID/stat, 10 ms ticks).
B=/tmp/measure/bin; R=/tmp/measure/raw; mkdir -p $R
python3 - <<'PY'
import gzip,struct
m=b'\x08\x2a'
open('/tmp/measure/body-none.bin','wb').write(b'\x00'+struct.pack('>I',len(m))+m)
z=gzip.compress(m)
open('/tmp/measure/body-gzip.bin','wb').write(b'\x01'+struct.pack('>I',len(z))+z)
PY
cell() { # server mode tool rep
  local srv=$1 mode=$2 tool=$3 rep=$4 sc=none
  [ "$mode" != none ] && sc=gzip
  PROTOBENCH_COMPRESSION=$sc GOMAXPROCS=1 taskset -c 0 $B/$srv --listen 127.0.0.1:38281 --metrics-listen 127.0.0.1:38282 >$R/$srv-server.log 2>&1 &
  local pid=$!; sleep 0.7
  local tag=$srv-$mode-$tool-$rep
  # warm-up 1 s on the same topology, then 5 s measured
  local H=(-H 'content-type: application/grpc' -H 'te: trailers') body=/tmp/measure/body-none.bin
  [ "$mode" = advertise ] && H+=(-H 'grpc-accept-encoding: identity,gzip')
  [ "$mode" = gzip ] && { H+=(-H 'grpc-encoding: gzip' -H 'grpc-accept-encoding: gzip'); body=/tmp/measure/body-gzip.bin; }
  if [ $tool = h2load ]; then
    taskset -c 1 h2load -c 1 -m 100 -t 1 -D 1 "${H[@]}" -d $body http://127.0.0.1:38281/protobench.v1.Bench/GetUser >/dev/null 2>&1
    local t0=$(awk '{print $14+$15}' /proc/$pid/stat)
    taskset -c 1 h2load -c 1 -m 100 -t 1 -D 5 "${H[@]}" -d $body http://127.0.0.1:38281/protobench.v1.Bench/GetUser >$R/$tag.txt 2>&1
    local t1=$(awk '{print $14+$15}' /proc/$pid/stat)
    local n=$(awk '/^requests:/{print $8}' $R/$tag.txt)
  else
    local c=none; [ "$mode" = gzip ] && c=gzip
    taskset -c 1 $B/protobench load --target grpc://127.0.0.1:38281 --method GetUser --connections 1 --concurrency 100 --duration 1s --warmup 0s --compression $c >/dev/null 2>&1
    local t0=$(awk '{print $14+$15}' /proc/$pid/stat)
    taskset -c 1 $B/protobench load --target grpc://127.0.0.1:38281 --method GetUser --connections 1 --concurrency 100 --duration 5s --warmup 0s --compression $c --out $R/$tag.json >/dev/null 2>&1
    local t1=$(awk '{print $14+$15}' /proc/$pid/stat)
    local n=$(python3 -c "import json;d=json.load(open('$R/$tag.json'));print(d['requests']-d['errors'])" 2>/dev/null)
  fi
  curl -s 127.0.0.1:38282/metrics | grep '^protobench_server_encoded_messages_total' > $R/$tag.enc
  kill $pid; wait $pid 2>/dev/null
  local replies=$(grep 'direction="reply"' $R/$tag.enc | sed 's/.*encoding="\([a-z]*\)".* \(.*\)/\1:\2/' | tr '\n' ' ')
  echo -e "$srv\t$mode\t$tool\t$rep\t$n\t$(( (t1-t0)*10 ))\t$(python3 -c "print(round(($t1-$t0)*10000/max(1,int('$n' or 0)),1))")\t$replies"
}
echo -e "server\tmode\ttool\trep\trequests\tserver_cpu_ms\tus_per_req\treplies_by_encoding"
for rep in 1 2; do
  for srv in grpc connect; do
    for mode in none advertise gzip; do cell $srv $mode h2load $rep; done
    for mode in none gzip; do cell $srv $mode protobench $rep; done
  done
done
