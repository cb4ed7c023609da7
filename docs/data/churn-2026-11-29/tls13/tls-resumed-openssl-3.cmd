taskset -c 1 /usr/bin/openssl s_time -connect 127.0.0.1:42009 -reuse -tls1_3 -time 5 -www /v1/users/42 -CAfile /tmp/protobench-churnbench-2237349351/tls/ca.pem -verify 2
