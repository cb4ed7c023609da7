package serverkit

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/contract"
)

// Knob is one tuning value a server was started with. Knobs are echoed on /config so that a run
// can record exactly how each server was tuned.
type Knob struct {
	Name  string `json:"name"` // snake_case form of the flag name
	Flag  string `json:"flag"`
	Env   string `json:"env"`
	Value any    `json:"value"`
}

// Config is a server's resolved configuration.
type Config struct {
	Protocol        string
	Listen          string // main listener, host:port
	MetricsListen   string // metrics/health listener, host:port
	MaxPayloadBytes int
	ShutdownTimeout time.Duration
	// HandlerCPU is CPU time every request burns on top of its work (calibration's injected
	// slowdown; 0 in every real comparison).
	HandlerCPU time.Duration
	// Probe asks the process to check its own /healthz and exit instead of serving.
	Probe bool
	// Knobs are the protocol's own tuning values, in declaration order.
	Knobs []Knob
	// TLS, when its CertFile is set, makes BindConfig terminate TLS.
	TLS TLSConfig
	// Compression is CompressionNone (the default: the server compresses nothing, whatever a
	// client advertises) or CompressionGzip (it compresses replies); a server that cannot
	// compress refuses gzip at start (Spec.Gzip).
	Compression string
}

// Compression values (targets.Compressions).
const (
	CompressionNone = "none"
	CompressionGzip = "gzip"
)

// Flags declares a server's flags. Each flag has an environment variable; after Parse, a flag
// given on the command line wins, then a set environment variable, then the default. Compose
// files set env, people running natively use flags, and both end up in the same Config.
type Flags struct {
	fs      *flag.FlagSet
	lookup  func(string) (string, bool)
	entries []*entry
}

type entry struct {
	flag, env string
	knob      bool
	set       func(string) error // parses a string into the destination
	get       func() any
}

// NewFlags returns an empty flag set named name. lookup reads the environment (os.LookupEnv in
// a real process; tests pass a map so they never touch the process environment).
func NewFlags(name string, lookup func(string) (string, bool)) *Flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &Flags{fs: fs, lookup: lookup}
}

func (f *Flags) add(name, env, usage string, knob bool, fv flag.Value, get func() any) {
	f.fs.Var(fv, name, fmt.Sprintf("%s (env %s)", usage, env))
	f.entries = append(f.entries, &entry{flag: name, env: env, knob: knob, set: fv.Set, get: get})
}

// Int declares an integer knob and returns where its value is stored after Parse.
func (f *Flags) Int(name, env string, def int, usage string) *int {
	p := new(int)
	*p = def
	f.add(name, env, usage, true, (*intValue)(p), func() any { return *p })
	return p
}

// String declares a string knob and returns where its value is stored after Parse.
func (f *Flags) String(name, env, def, usage string) *string {
	p := new(string)
	*p = def
	f.add(name, env, usage, true, (*stringValue)(p), func() any { return *p })
	return p
}

// Duration declares a duration knob (Go syntax, "10s") and returns where it is stored.
func (f *Flags) Duration(name, env string, def time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	*p = def
	f.add(name, env, usage, true, (*durationValue)(p), func() any { return p.String() })
	return p
}

// Usage writes the flag list, each with its environment variable, to w.
func (f *Flags) Usage(w io.Writer) {
	fmt.Fprintf(w, "Usage of %s:\n", f.fs.Name())
	f.fs.SetOutput(w)
	f.fs.PrintDefaults()
	f.fs.SetOutput(io.Discard)
}

// ErrHelp is returned by Parse when -h or --help was given.
var ErrHelp = flag.ErrHelp

// parse applies command-line flags, then the environment to every flag the command line did not
// set. Errors name the flag or the variable and what was expected.
func (f *Flags) parse(args []string) error {
	if err := f.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ErrHelp
		}
		return err
	}
	if f.fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: every setting is a --flag", f.fs.Arg(0))
	}
	explicit := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { explicit[fl.Name] = true })
	for _, e := range f.entries {
		if explicit[e.flag] || e.env == "" || f.lookup == nil {
			continue
		}
		v, ok := f.lookup(e.env)
		if !ok || v == "" {
			continue
		}
		if err := e.set(v); err != nil {
			return fmt.Errorf("environment %s=%q: %v", e.env, v, err)
		}
	}
	return nil
}

func (f *Flags) knobs() []Knob {
	var ks []Knob
	for _, e := range f.entries {
		if e.knob {
			ks = append(ks, Knob{Name: strings.ReplaceAll(e.flag, "-", "_"), Flag: "--" + e.flag, Env: e.env, Value: e.get()})
		}
	}
	return ks
}

type intValue int

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("want an integer, got %q", s)
	}
	if n < 0 {
		return fmt.Errorf("want a non-negative integer, got %d", n)
	}
	*v = intValue(n)
	return nil
}
func (v *intValue) String() string { return strconv.Itoa(int(*v)) }

type stringValue string

func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string     { return string(*v) }

type durationValue time.Duration

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return fmt.Errorf("want a non-negative duration such as 10s, got %q", s)
	}
	*v = durationValue(d)
	return nil
}
func (v *durationValue) String() string { return time.Duration(*v).String() }

type listValue []string

func (v *listValue) Set(s string) error {
	*v = nil
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*v = append(*v, p)
		}
	}
	return nil
}
func (v *listValue) String() string { return strings.Join(*v, ",") }

type boolValue bool

func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false, got %q", s)
	}
	*v = boolValue(b)
	return nil
}
func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) IsBoolFlag() bool { return true }

// common declares the flags every server has, in front of the protocol's own knobs.
func (f *Flags) common(cfg *Config, defaultListen string) {
	cfg.Listen = defaultListen
	cfg.MetricsListen = DefaultMetricsListen
	cfg.MaxPayloadBytes = contract.DefaultMaxPayloadBytes
	cfg.ShutdownTimeout = 10 * time.Second
	f.add("listen", "PROTOBENCH_LISTEN", "main listen address host:port", false, (*stringValue)(&cfg.Listen), nil)
	f.add("metrics-listen", "PROTOBENCH_METRICS_LISTEN", "metrics, /healthz and /config listen address host:port", false, (*stringValue)(&cfg.MetricsListen), nil)
	f.add("max-payload-bytes", "PROTOBENCH_MAX_PAYLOAD_BYTES", "largest accepted payload in bytes; larger requests get the protocol's size error, and a message above it plus 1 KiB of framing is refused unread", false, (*intValue)(&cfg.MaxPayloadBytes), nil)
	f.add("handler-cpu", "PROTOBENCH_HANDLER_CPU", "CPU time every request burns on top of its work, in integer rounds calibrated at start against the thread's CPU clock: a known slowdown for calibration (0 to 1ms)", false, (*durationValue)(&cfg.HandlerCPU), nil)
	f.add("shutdown-timeout", "PROTOBENCH_SHUTDOWN_TIMEOUT", "how long a graceful stop waits for in-flight calls before closing connections", false, (*durationValue)(&cfg.ShutdownTimeout), nil)
	f.add("tls-cert", "PROTOBENCH_TLS_CERT", "serve TLS with this PEM certificate (with --tls-key); empty: cleartext", false, (*stringValue)(&cfg.TLS.CertFile), nil)
	f.add("tls-key", "PROTOBENCH_TLS_KEY", "PEM private key of --tls-cert", false, (*stringValue)(&cfg.TLS.KeyFile), nil)
	f.add("tls-alpn", "PROTOBENCH_TLS_ALPN", "ALPN protocols offered, comma-separated (the target registry sets them: h2 for gRPC)", false, (*listValue)(&cfg.TLS.ALPN), nil)
	f.add("tls-handshake-timeout", "PROTOBENCH_TLS_HANDSHAKE_TIMEOUT", "time a client has to finish its TLS handshake", false, (*durationValue)(&cfg.TLS.HandshakeTimeout), nil)
	cfg.Compression = CompressionNone
	f.add("compression", "PROTOBENCH_COMPRESSION", "none (compress nothing, whatever a client advertises) or gzip (compress replies; the step's compression)", false, (*stringValue)(&cfg.Compression), nil)
	f.add("tls-max-handshakes", "PROTOBENCH_TLS_MAX_HANDSHAKES", "TLS handshakes in progress at most; beyond it connections wait in the backlog (0: 1024)", false, (*intValue)(&cfg.TLS.MaxHandshakes), nil)
	f.fs.Var((*boolValue)(&cfg.Probe), "probe", "GET this server's own /healthz and exit 0 if it answers 200 (compose healthcheck)")
}

// DefaultMetricsListen is where every server serves /metrics unless told otherwise.
const DefaultMetricsListen = ":9100"
