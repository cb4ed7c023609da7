package loadgen

import (
	"flag"
	"fmt"
	"io"
	"time"
)

// AllowedLabels are the --label keys: they become live-metric labels, which must stay bounded.
var AllowedLabels = []string{"scenario", "step", "run_id"}

// Flags are the parsed command-line options of `protobench load`, before validation.
type Flags struct {
	Target         string
	TLS            TLSOptions
	Method         string
	Connections    int
	Concurrency    int
	Rate           float64
	RateSteps      string
	Ramp           string
	Duration       time.Duration
	Warmup         time.Duration
	PayloadBytes   int
	Out            string
	Timeseries     string
	MaxInflight    int
	ConnectTimeout time.Duration
	RequestTimeout time.Duration
	MetricsListen  string
	MetricsLinger  time.Duration
	Labels         labelFlag
	TargetName     string
	Progress       string
	// RequestsPerConnection closes each connection after that many requests (0: reuse).
	RequestsPerConnection int
	Compression           string    // --compression: none or gzip
	StartAt               time.Time // --start-at (startat.go): when to start, once connected

	set map[string]bool // flags given explicitly
	// owner names the schemes of each driver flag (several when drivers share a flag, as http
	// and connect share --http-version); apply moves a driver's flags into the Config.
	owner map[string][]string
	apply map[string]func(*Config) error
}

// FlagDeclarer is a driver with flags of its own on `protobench load` (--grpc-client,
// --zmq-pattern, --http-version, ...), so that the command line knows no protocol.
type FlagDeclarer interface {
	// DeclareFlags declares the driver's flags on fs and returns what, once the flags are
	// parsed and the target uses this driver, checks their values and moves them into cfg
	// (cfg.Options, cfg.Pattern). It runs before Driver.Check.
	DeclareFlags(fs *flag.FlagSet) func(cfg *Config) error
}

// NewFlagSet declares the flags of `protobench load` into a FlagSet that reports to stderr.
func NewFlagSet(stderr io.Writer) (*flag.FlagSet, *Flags) {
	f := &Flags{Labels: labelFlag{}}
	fs := flag.NewFlagSet("protobench load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.Target, "target", "", targetUsage())
	fs.StringVar(&f.Method, "method", "", methodUsage())
	fs.IntVar(&f.Connections, "connections", 4, "connections to open (HTTP/1.1: one TCP connection per connection × concurrency slot)")
	fs.IntVar(&f.Concurrency, "concurrency", 16, "requests in flight per connection in the closed model (gRPC: streams or calls per connection)")
	fs.Float64Var(&f.Rate, "rate", 0, "open model: constant total rate in requests per second (0 = closed model)")
	fs.StringVar(&f.RateSteps, "rate-steps", "", "open model steps: rate:duration,... e.g. 1000:10s,2000:10s (the steps set the duration)")
	fs.StringVar(&f.Ramp, "ramp", "", "open model linear ramp: from:to requests per second over --duration, e.g. 1000:8000")
	fs.DurationVar(&f.Duration, "duration", 10*time.Second, "measured duration (warm-up excluded)")
	fs.DurationVar(&f.Warmup, "warmup", time.Second, "warm-up before the measured window (not recorded)")
	fs.IntVar(&f.PayloadBytes, "payload-bytes", 0, "Echo/EchoStream/Publish/push payload size in bytes")
	fs.StringVar(&f.Out, "out", "", "write the JSON result to this file (- for stdout, then the text report goes to stderr)")
	fs.StringVar(&f.Timeseries, "timeseries", "", "write the per-second timeline (warm-up included) as JSON to this file")
	fs.IntVar(&f.MaxInflight, "max-inflight", 0, "open model: most requests in flight at once, spread over the connections (0 = connections × concurrency)")
	fs.StringVar(&f.Compression, "compression", CompressionNone, "none (advertise no compressor, send nothing compressed) or gzip (compress requests, accept gzip replies); gzip on "+schemeURLs(GzipSchemes())+" only")
	fs.IntVar(&f.RequestsPerConnection, "requests-per-connection", 0, "connection churn: close each connection after this many requests and open a new one, one connection per request in flight (0 = reuse connections for the whole run); "+schemeURLs(ChurnSchemes()))
	fs.DurationVar(&f.ConnectTimeout, "connect-timeout", 5*time.Second, "time allowed to connect (and to reconnect after a lost connection)")
	fs.DurationVar(&f.RequestTimeout, "request-timeout", 0, "per-request timeout, counted as a transport:timeout error (0 = none)")
	fs.StringVar(&f.MetricsListen, "metrics-listen", "", "serve live Prometheus metrics on this address, e.g. :9102 (off by default)")
	fs.DurationVar(&f.MetricsLinger, "metrics-linger", 0, "with --metrics-listen: keep serving this long after the run so that the last values are scraped (the runner takes the end of the process as the end of the window, so it leaves this at 0)")
	fs.Var(f.Labels, "label", "key=value attached to live metrics and the result (repeatable; keys: scenario, step, run_id)")
	fs.StringVar(&f.TargetName, "target-name", "", "server name recorded in the result and metrics (default from the scheme: "+targetNames()+")")
	fs.StringVar(&f.Progress, "progress", "auto", "progress line on stderr: auto (only on a TTY), on, off")
	fs.StringVar(&f.TLS.CAFile, "tls-ca", "", "speak TLS, trusting only this PEM CA (the run's, made by the runner); "+schemeURLs(TLSSchemes())+" (http and connect: HTTPS/1.1 or HTTPS/2 by --http-version)")
	fs.StringVar(&f.TLS.ServerName, "tls-server-name", "", "with --tls-ca: the name to verify in the server's certificate (default the target's host)")
	fs.StringVar(&f.TLS.Version, "tls-version", "1.3", "with --tls-ca: the one TLS version offered, 1.3 or 1.2")
	fs.BoolVar(&f.TLS.Resume, "tls-resume", true, "with --tls-ca: keep a session cache so that reconnections resume (false: every handshake is full)")
	fs.Func("start-at", startAtUsage, f.setStartAt)
	f.declareDriverFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: protobench load --target URL [flags]\n\n")
		fs.PrintDefaults()
	}
	return fs, f
}

// declareDriverFlags adds every registered driver's own flags to fs.
func (f *Flags) declareDriverFlags(fs *flag.FlagSet) {
	f.owner, f.apply = map[string][]string{}, map[string]func(*Config) error{}
	for _, scheme := range Schemes() {
		d, _ := Lookup(scheme)
		fd, ok := d.(FlagDeclarer)
		if !ok {
			continue
		}
		own := flag.NewFlagSet(scheme, flag.ContinueOnError)
		f.apply[scheme] = fd.DeclareFlags(own)
		own.VisitAll(func(fl *flag.Flag) {
			if prev := fs.Lookup(fl.Name); prev != nil {
				// A flag another driver declared too: setting it sets both drivers' values.
				prev.Value = sharedValue{prev.Value, fl.Value}
			} else {
				fs.Var(fl.Value, fl.Name, fl.Usage)
			}
			f.owner[fl.Name] = append(f.owner[fl.Name], scheme)
		})
	}
}

// sharedValue is a flag two drivers declare under one name.
type sharedValue [2]flag.Value

func (v sharedValue) String() string { return v[0].String() }

func (v sharedValue) Set(s string) error {
	if err := v[0].Set(s); err != nil {
		return err
	}
	return v[1].Set(s)
}
