package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/contract"
)

// Exit codes of Command.
const (
	ExitOK    = 0
	ExitFail  = 1 // the run failed or ended early: target unreachable or lost, no request done
	ExitUsage = 2 // bad flags or target URL
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

type labelFlag map[string]string

func (l labelFlag) String() string {
	parts := make([]string, 0, len(l))
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (l labelFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	allowed := false
	for _, a := range AllowedLabels {
		allowed = allowed || a == k
	}
	if !allowed {
		return fmt.Errorf("label key %q is not one of %s (live-metric labels must stay bounded)", k, strings.Join(AllowedLabels, ", "))
	}
	if _, dup := l[k]; dup {
		return fmt.Errorf("label %q given twice", k)
	}
	l[k] = v
	return nil
}

// NewFlagSet declares the flags of `protobench load` into a FlagSet that reports to stderr.
func NewFlagSet(stderr io.Writer) (*flag.FlagSet, *Flags) {
	f := &Flags{Labels: labelFlag{}}
	fs := flag.NewFlagSet("protobench load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.Target, "target", "", "target URL: grpc://host:port, http://host:port, netrpc://host:port or zmq://host:port (the ROUTER)")
	fs.StringVar(&f.Method, "method", "", "contract method: Echo, GetUser, Multiply, Divide, EchoStream (gRPC), Publish (zmq sub); default GetUser. A mix spreads the connections by weight: Echo:50,GetUser:30,Multiply:20")
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
	fs.IntVar(&f.RequestsPerConnection, "requests-per-connection", 0, "connection churn: close each connection after this many requests and open a new one, one connection per request in flight (0 = reuse connections for the whole run); grpc, http, connect and netrpc")
	fs.DurationVar(&f.ConnectTimeout, "connect-timeout", 5*time.Second, "time allowed to connect (and to reconnect after a lost connection)")
	fs.DurationVar(&f.RequestTimeout, "request-timeout", 0, "per-request timeout, counted as a transport:timeout error (0 = none)")
	fs.StringVar(&f.MetricsListen, "metrics-listen", "", "serve live Prometheus metrics on this address, e.g. :9102 (off by default)")
	fs.DurationVar(&f.MetricsLinger, "metrics-linger", 0, "with --metrics-listen: keep serving this long after the run so that the last values are scraped (the runner takes the end of the process as the end of the window, so it leaves this at 0)")
	fs.Var(f.Labels, "label", "key=value attached to live metrics and the result (repeatable; keys: scenario, step, run_id)")
	fs.StringVar(&f.TargetName, "target-name", "", "server name recorded in the result and metrics (default from the scheme: grpc, rest, netrpc, zeromq)")
	fs.StringVar(&f.Progress, "progress", "auto", "progress line on stderr: auto (only on a TTY), on, off")
	fs.StringVar(&f.TLS.CAFile, "tls-ca", "", "speak TLS, trusting only this PEM CA (the run's, made by the runner); grpc, http and connect (HTTPS/1.1 or HTTPS/2 by --http-version), netrpc")
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

// ParseArgs parses and validates the command line into a Config.
func ParseArgs(args []string, stderr io.Writer) (*Config, *Flags, error) {
	fs, f := NewFlagSet(stderr)
	if err := fs.Parse(args); err != nil {
		return nil, f, err
	}
	if fs.NArg() > 0 {
		return nil, f, fmt.Errorf("unexpected argument %q (all options are flags)", fs.Arg(0))
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	cfg, err := f.Config()
	return cfg, f, err
}

// Config validates the flags in one place and builds the run configuration.
func (f *Flags) Config() (*Config, error) {
	target, err := ParseTarget(f.Target)
	if err != nil {
		return nil, err
	}
	d, ok := Lookup(target.Scheme)
	if !ok {
		return nil, fmt.Errorf("--target %q: scheme %q is not one of %s", f.Target, target.Scheme, strings.Join(Schemes(), ", "))
	}
	info := d.Info()
	cfg := &Config{
		Target:         target,
		TargetName:     f.TargetName,
		Method:         f.Method,
		Connections:    f.Connections,
		Concurrency:    f.Concurrency,
		Duration:       f.Duration,
		Warmup:         f.Warmup,
		PayloadBytes:   f.PayloadBytes,
		MaxInflight:    f.MaxInflight,
		ConnectTimeout: f.ConnectTimeout,
		RequestTimeout: f.RequestTimeout,
		Labels:         map[string]string(f.Labels),
		Options:        map[string]string{},
	}
	cfg.RequestsPerConnection = f.RequestsPerConnection
	if cfg.TargetName == "" {
		cfg.TargetName = info.TargetName
	}
	if f.TLS.CAFile != "" {
		if target.Scheme == "zmq" {
			return nil, errors.New("--tls-ca: zmq:// has no TLS (ZeroMQ's own security is CURVE, see docs/tls.md)")
		}
		if cfg.TLS, err = ClientTLS(f.TLS, target.Address); err != nil {
			return nil, err
		}
	} else {
		for _, n := range []string{"tls-server-name", "tls-version", "tls-resume"} {
			if f.set[n] {
				return nil, fmt.Errorf("--%s applies with --tls-ca only", n)
			}
		}
	}
	for name := range f.set {
		if schemes, ok := f.owner[name]; ok && !slices.Contains(schemes, target.Scheme) {
			return nil, fmt.Errorf("--%s applies only to %s:// targets, not %s://", name, strings.Join(schemes, ":// and "), target.Scheme)
		}
	}
	if apply := f.apply[target.Scheme]; apply != nil {
		if err := apply(cfg); err != nil {
			return nil, err
		}
	}
	switch {
	case cfg.Connections < 1:
		return nil, fmt.Errorf("--connections must be at least 1, got %d", cfg.Connections)
	case cfg.Concurrency < 1:
		return nil, fmt.Errorf("--concurrency must be at least 1, got %d", cfg.Concurrency)
	case f.Rate < 0:
		return nil, fmt.Errorf("--rate must be 0 (closed model) or positive, got %g", f.Rate)
	case cfg.Warmup < 0:
		return nil, fmt.Errorf("--warmup must not be negative, got %s", cfg.Warmup)
	case cfg.PayloadBytes < 0 || cfg.PayloadBytes > contract.DefaultMaxPayloadBytes:
		return nil, fmt.Errorf("--payload-bytes must be between 0 and %d, got %d", contract.DefaultMaxPayloadBytes, cfg.PayloadBytes)
	case cfg.MaxInflight < 0:
		return nil, fmt.Errorf("--max-inflight must not be negative, got %d", cfg.MaxInflight)
	case cfg.RequestsPerConnection < 0:
		return nil, fmt.Errorf("--requests-per-connection must be 0 (reuse connections) or positive, got %d", cfg.RequestsPerConnection)
	case cfg.ConnectTimeout <= 0:
		return nil, fmt.Errorf("--connect-timeout must be positive, got %s", cfg.ConnectTimeout)
	case cfg.RequestTimeout < 0:
		return nil, fmt.Errorf("--request-timeout must not be negative, got %s", cfg.RequestTimeout)
	}
	models := 0
	for _, on := range []bool{f.Rate > 0, f.RateSteps != "", f.Ramp != ""} {
		if on {
			models++
		}
	}
	if models > 1 {
		return nil, errors.New("give only one of --rate, --rate-steps and --ramp")
	}
	switch {
	case f.RateSteps != "":
		if f.set["duration"] {
			return nil, errors.New("--duration conflicts with --rate-steps: the steps' durations make the duration")
		}
		steps, err := ParseSteps(f.RateSteps)
		if err != nil {
			return nil, fmt.Errorf("--rate-steps %q: %v", f.RateSteps, err)
		}
		cfg.Pacer = Steps(steps...)
	case f.Ramp != "":
		from, to, err := ParseRamp(f.Ramp)
		if err != nil {
			return nil, fmt.Errorf("--ramp %q: %v", f.Ramp, err)
		}
		if cfg.Duration <= 0 {
			return nil, fmt.Errorf("--duration must be positive, got %s", cfg.Duration)
		}
		cfg.Pacer = Ramp{From: from, To: to, For: cfg.Duration}
	case f.Rate > 0:
		if cfg.Duration <= 0 {
			return nil, fmt.Errorf("--duration must be positive, got %s", cfg.Duration)
		}
		cfg.Pacer = Constant{PerSec: f.Rate, For: cfg.Duration}
	default:
		if cfg.Duration <= 0 {
			return nil, fmt.Errorf("--duration must be positive, got %s", cfg.Duration)
		}
		if cfg.MaxInflight > 0 {
			return nil, errors.New("--max-inflight applies to the open model (--rate, --rate-steps or --ramp); the closed model has connections × concurrency in flight")
		}
	}
	if cfg.Pacer != nil {
		cfg.Duration = cfg.Pacer.Length()
		if cfg.Pacer.Hits() == 0 {
			return nil, errors.New("the open-model schedule holds no request: raise the rate or the duration")
		}
	}
	if f.Timeseries != "" && f.Timeseries == f.Out {
		return nil, fmt.Errorf("--timeseries %q: the same file as --out; give it a name of its own", f.Timeseries)
	}
	switch f.Progress {
	case "auto", "on", "off":
	default:
		return nil, fmt.Errorf("--progress must be auto, on or off, got %q", f.Progress)
	}
	if f.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(f.MetricsListen); err != nil {
			return nil, fmt.Errorf("--metrics-listen %q: want host:port or :port: %v", f.MetricsListen, err)
		}
	}
	if cfg.Mix, err = ParseMix(cfg.Method); err != nil {
		return nil, err
	}
	if err := checkDriver(d, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// ParseTarget parses a --target URL: scheme://host:port with nothing after it.
func ParseTarget(s string) (Target, error) {
	if s == "" {
		return Target{}, errors.New("--target is required (e.g. grpc://127.0.0.1:50051)")
	}
	u, err := url.Parse(s)
	if !strings.Contains(s, "://") || err != nil || u.Scheme == "" || u.Host == "" {
		return Target{}, fmt.Errorf("--target %q: want scheme://host:port, e.g. grpc://127.0.0.1:50051", s)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		return Target{}, fmt.Errorf("--target %q: want host:port after %s://", s, u.Scheme)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return Target{}, fmt.Errorf("--target %q: port %q is not a number from 1 to 65535", s, port)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return Target{}, fmt.Errorf("--target %q: only scheme://host:port is allowed; choose the call with --method", s)
	}
	return Target{URL: s, Scheme: u.Scheme, Address: u.Host}, nil
}

// ParseSteps parses "rate:duration,rate:duration".
func ParseSteps(s string) ([]Constant, error) {
	var out []Constant
	for i, part := range strings.Split(s, ",") {
		r, d, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("step %d %q: want rate:duration, e.g. 1000:10s", i+1, part)
		}
		rate, err := strconv.ParseFloat(r, 64)
		if err != nil || rate <= 0 {
			return nil, fmt.Errorf("step %d %q: rate %q must be a positive number", i+1, part, r)
		}
		dur, err := time.ParseDuration(d)
		if err != nil || dur <= 0 {
			return nil, fmt.Errorf("step %d %q: duration %q must be positive, e.g. 10s", i+1, part, d)
		}
		out = append(out, Constant{PerSec: rate, For: dur})
	}
	return out, nil
}

// ParseRamp parses "from:to" in requests per second.
func ParseRamp(s string) (from, to float64, err error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, errors.New("want from:to in requests per second, e.g. 1000:8000")
	}
	from, err1 := strconv.ParseFloat(a, 64)
	to, err2 := strconv.ParseFloat(b, 64)
	if err1 != nil || err2 != nil || from < 0 || to < 0 || from+to == 0 {
		return 0, 0, errors.New("from and to must be non-negative numbers, not both 0")
	}
	return from, to, nil
}

// Command runs `protobench load` (drivers must be registered: see package loadcmd, which imports
// them all). It returns the process exit code.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, f, err := ParseArgs(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		if !isFlagPkgError(err) {
			fmt.Fprintf(stderr, "protobench load: %v\n", err)
		}
		return ExitUsage
	}

	report := stdout
	if f.Out == "-" {
		report = stderr
	}
	opts := RunOptions{StartAt: f.StartAt}
	if f.Progress == "on" || (f.Progress == "auto" && isTerminal(stderr)) {
		opts.Progress = func(p Progress) { fmt.Fprintf(stderr, "\r\033[K%s", FormatProgress(p)) }
	}
	var ms *MetricsServer
	if f.MetricsListen != "" {
		opts.Live = NewLiveMetrics(cfg.TargetName, cfg.Method, cfg.Open(), cfg.Labels)
		ms, err = ServeMetrics(f.MetricsListen, opts.Live)
		if err != nil {
			fmt.Fprintf(stderr, "protobench load: --metrics-listen %s: %v\n", f.MetricsListen, err)
			return ExitFail
		}
		defer ms.Close()
	}

	res, runErr := Run(ctx, cfg, opts)
	if opts.Progress != nil {
		fmt.Fprint(stderr, "\r\033[K")
	}
	var ue *UsageError
	if errors.As(runErr, &ue) {
		fmt.Fprintf(stderr, "protobench load: %v\n", ue)
		return ExitUsage
	}
	res.Args = append([]string{"load"}, args...)
	if res.Requests > 0 || runErr == nil {
		WriteText(report, res) // a run that never started has nothing to report but its error
	}
	if f.Out != "" {
		if err := writeJSON(f.Out, stdout, res); err != nil {
			fmt.Fprintf(stderr, "protobench load: --out %s: %v\n", f.Out, err)
			return ExitFail
		}
	}
	if f.Timeseries != "" {
		if err := writeJSON(f.Timeseries, stdout, res.Timeseries()); err != nil {
			fmt.Fprintf(stderr, "protobench load: --timeseries %s: %v\n", f.Timeseries, err)
			return ExitFail
		}
	}
	if ms != nil && f.MetricsLinger > 0 {
		select {
		case <-time.After(f.MetricsLinger):
		case <-ctx.Done():
		}
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "protobench load: %v\n", runErr)
		return ExitFail
	}
	return ExitOK
}

// isFlagPkgError tells the flag package's own parse errors (already printed with the usage by
// the FlagSet) from ours.
func isFlagPkgError(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "flag provided but not defined") || strings.HasPrefix(s, "invalid value") ||
		strings.HasPrefix(s, "invalid boolean") || strings.HasPrefix(s, "bad flag syntax") || strings.HasPrefix(s, "flag needs an argument")
}

func writeJSON(path string, stdout io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func isTerminal(w io.Writer) bool {
	if f, ok := w.(*os.File); ok {
		st, err := f.Stat()
		return err == nil && st.Mode()&os.ModeCharDevice != 0
	}
	return false
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
