taskset -c 1 /usr/bin/wrk -t 1 -c 64 -d 2s --timeout 20s --latency -s /work/main/internal/tool/wrk/report.lua http://127.0.0.1:40023/v1/users/42 -- method=GetUser id=42
