taskset -c 1 /usr/bin/wrk -t 1 -c 8 -d 5s -H Connection: close http://127.0.0.1:45587/v1/users/42
