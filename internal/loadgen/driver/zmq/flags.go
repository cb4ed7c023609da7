package zmqdriver

import (
	"flag"
	"fmt"
	"net"
	"net/url"

	"github.com/protobench/protobench/internal/loadgen"
)

// DeclareFlags implements loadgen.FlagDeclarer.
func (Driver) DeclareFlags(fs *flag.FlagSet) func(*loadgen.Config) error {
	pattern := fs.String("zmq-pattern", "", "ZeroMQ pattern: dealer (pipelined, default), req (lockstep), push (to the server's PULL sink), sub (fan-out via Publish)")
	metricsURL := fs.String("zmq-metrics-url", "", "zmq push: the server's /metrics URL where the sink is counted (default http://<target host>:9100/metrics)")
	pullAddr := fs.String("zmq-pull-addr", "", "zmq push: the server's PULL sink host:port (default <target host>:5556)")
	pubAddr := fs.String("zmq-pub-addr", "", "zmq sub: the server's PUB host:port (default <target host>:5557)")
	client := fs.String("zmq-client", ClientLean, "zmq dealer: lean (the generator's own ZMTP client on the event loops, in both models) or libzmq (always)")
	return func(cfg *loadgen.Config) error {
		if *client != ClientLean && *client != ClientLibzmq {
			return fmt.Errorf("--zmq-client must be %s or %s, got %q", ClientLean, ClientLibzmq, *client)
		}
		cfg.Options["zmq_client"] = *client
		cfg.Pattern = *pattern
		for _, o := range []struct{ flag, key, value string }{
			{"zmq-pull-addr", "pull_addr", *pullAddr},
			{"zmq-pub-addr", "pub_addr", *pubAddr},
		} {
			if o.value == "" {
				continue
			}
			if _, _, err := net.SplitHostPort(o.value); err != nil {
				return fmt.Errorf("--%s %q: want host:port", o.flag, o.value)
			}
			cfg.Options[o.key] = o.value
		}
		if *metricsURL != "" {
			if _, err := url.ParseRequestURI(*metricsURL); err != nil {
				return fmt.Errorf("--zmq-metrics-url %q: %v", *metricsURL, err)
			}
			cfg.Options["metrics_url"] = *metricsURL
		}
		return nil
	}
}
