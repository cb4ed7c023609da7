package loadgen

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/contract"
)

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

// Config validates the flags in one place and builds the run configuration. The checks run in a
// fixed order, so that a command line with several mistakes always reports the same one.
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
	cfg := f.baseConfig(target)
	if err := checkCompression(cfg.Compression, d, target.Scheme); err != nil {
		return nil, err
	}
	if cfg.TargetName == "" {
		cfg.TargetName = info.TargetName
	}
	if err := f.setTLS(cfg, info); err != nil {
		return nil, err
	}
	if err := f.applyDriverFlags(cfg); err != nil {
		return nil, err
	}
	if err := f.checkRanges(cfg); err != nil {
		return nil, err
	}
	if err := f.setPacer(cfg); err != nil {
		return nil, err
	}
	if err := f.checkOutputs(); err != nil {
		return nil, err
	}
	if cfg.Mix, err = ParseMix(cfg.Method); err != nil {
		return nil, err
	}
	if err := checkDriver(d, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// baseConfig copies the flags that need no checking against others into a Config.
func (f *Flags) baseConfig(target Target) *Config {
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
	cfg.Compression = f.Compression
	return cfg
}

// setTLS builds the client's TLS configuration from --tls-ca; the other --tls-* flags need it.
func (f *Flags) setTLS(cfg *Config, info DriverInfo) error {
	target := cfg.Target
	if f.TLS.CAFile == "" {
		for _, n := range []string{"tls-server-name", "tls-version", "tls-resume"} {
			if f.set[n] {
				return fmt.Errorf("--%s applies with --tls-ca only", n)
			}
		}
		return nil
	}
	if why := info.NoTLS; why != "" {
		return fmt.Errorf("--tls-ca: %s:// has no TLS (%s)", target.Scheme, why)
	}
	var err error
	cfg.TLS, err = ClientTLS(f.TLS, target.Address)
	return err
}

// applyDriverFlags refuses a driver's flag on another driver's target, then lets the target's
// driver move its own flags into cfg.
func (f *Flags) applyDriverFlags(cfg *Config) error {
	scheme := cfg.Target.Scheme
	for name := range f.set {
		if schemes, ok := f.owner[name]; ok && !slices.Contains(schemes, scheme) {
			return fmt.Errorf("--%s applies only to %s:// targets, not %s://", name, strings.Join(schemes, ":// and "), scheme)
		}
	}
	if apply := f.apply[scheme]; apply != nil {
		return apply(cfg)
	}
	return nil
}

// checkRanges checks every number that has a range of its own.
func (f *Flags) checkRanges(cfg *Config) error {
	switch {
	case cfg.Connections < 1:
		return fmt.Errorf("--connections must be at least 1, got %d", cfg.Connections)
	case cfg.Concurrency < 1:
		return fmt.Errorf("--concurrency must be at least 1, got %d", cfg.Concurrency)
	case f.Rate < 0:
		return fmt.Errorf("--rate must be 0 (closed model) or positive, got %g", f.Rate)
	case cfg.Warmup < 0:
		return fmt.Errorf("--warmup must not be negative, got %s", cfg.Warmup)
	case cfg.PayloadBytes < 0 || cfg.PayloadBytes > contract.DefaultMaxPayloadBytes:
		return fmt.Errorf("--payload-bytes must be between 0 and %d, got %d", contract.DefaultMaxPayloadBytes, cfg.PayloadBytes)
	case cfg.MaxInflight < 0:
		return fmt.Errorf("--max-inflight must not be negative, got %d", cfg.MaxInflight)
	case cfg.RequestsPerConnection < 0:
		return fmt.Errorf("--requests-per-connection must be 0 (reuse connections) or positive, got %d", cfg.RequestsPerConnection)
	case cfg.ConnectTimeout <= 0:
		return fmt.Errorf("--connect-timeout must be positive, got %s", cfg.ConnectTimeout)
	case cfg.RequestTimeout < 0:
		return fmt.Errorf("--request-timeout must not be negative, got %s", cfg.RequestTimeout)
	}
	return nil
}

// setPacer picks the load model: the open model's pacer from one of --rate, --rate-steps and
// --ramp, or none (the closed model). The open model's duration is its schedule's.
func (f *Flags) setPacer(cfg *Config) error {
	models := 0
	for _, on := range []bool{f.Rate > 0, f.RateSteps != "", f.Ramp != ""} {
		if on {
			models++
		}
	}
	if models > 1 {
		return errors.New("give only one of --rate, --rate-steps and --ramp")
	}
	switch {
	case f.RateSteps != "":
		if f.set["duration"] {
			return errors.New("--duration conflicts with --rate-steps: the steps' durations make the duration")
		}
		steps, err := ParseSteps(f.RateSteps)
		if err != nil {
			return fmt.Errorf("--rate-steps %q: %v", f.RateSteps, err)
		}
		cfg.Pacer = Steps(steps...)
	case f.Ramp != "":
		from, to, err := ParseRamp(f.Ramp)
		if err != nil {
			return fmt.Errorf("--ramp %q: %v", f.Ramp, err)
		}
		if cfg.Duration <= 0 {
			return fmt.Errorf("--duration must be positive, got %s", cfg.Duration)
		}
		cfg.Pacer = Ramp{From: from, To: to, For: cfg.Duration}
	case f.Rate > 0:
		if cfg.Duration <= 0 {
			return fmt.Errorf("--duration must be positive, got %s", cfg.Duration)
		}
		cfg.Pacer = Constant{PerSec: f.Rate, For: cfg.Duration}
	default:
		if cfg.Duration <= 0 {
			return fmt.Errorf("--duration must be positive, got %s", cfg.Duration)
		}
		if cfg.MaxInflight > 0 {
			return errors.New("--max-inflight applies to the open model (--rate, --rate-steps or --ramp); the closed model has connections × concurrency in flight")
		}
	}
	if cfg.Pacer != nil {
		cfg.Duration = cfg.Pacer.Length()
		if cfg.Pacer.Hits() == 0 {
			return errors.New("the open-model schedule holds no request: raise the rate or the duration")
		}
	}
	return nil
}

// checkOutputs checks where the results, the progress line and the live metrics go.
func (f *Flags) checkOutputs() error {
	if f.Timeseries != "" && f.Timeseries == f.Out {
		return fmt.Errorf("--timeseries %q: the same file as --out; give it a name of its own", f.Timeseries)
	}
	switch f.Progress {
	case "auto", "on", "off":
	default:
		return fmt.Errorf("--progress must be auto, on or off, got %q", f.Progress)
	}
	if f.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(f.MetricsListen); err != nil {
			return fmt.Errorf("--metrics-listen %q: want host:port or :port: %v", f.MetricsListen, err)
		}
	}
	return nil
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
