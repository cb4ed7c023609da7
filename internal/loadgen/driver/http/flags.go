package httpdriver

import (
	"flag"
	"fmt"
	"strings"

	"github.com/protobench/protobench/internal/loadgen"
)

// headerFlag collects repeated --http-header values.
type headerFlag []string

func (h *headerFlag) String() string { return strings.Join(*h, "; ") }

func (h *headerFlag) Set(s string) error {
	name, _, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(name) == "" || strings.ContainsAny(s, "\r\n") {
		return fmt.Errorf("want 'Name: value' on one line, got %q", s)
	}
	*h = append(*h, s)
	return nil
}

// DeclareFlags implements loadgen.FlagDeclarer.
// A Variant declares --http-version and --encoding only, under the same names (they mean the
// same on its scheme) and without the flags of a request of one's own.
func (d Driver) DeclareFlags(fs *flag.FlagSet) func(*loadgen.Config) error {
	version := fs.String("http-version", Version11, "http, connect: 1.1 (one request per TCP connection at a time: connections × concurrency sockets) or 2 (h2c with prior knowledge: concurrency streams per connection)")
	encoding := fs.String("encoding", EncodingJSON, "http, connect: body encoding of the contract's calls: json, or protobuf (REST: application/x-protobuf; Connect: application/proto)")
	client := fs.String("http-client", ClientLean, "http, connect: lean (the generator's event loops, in both models) or std (a goroutine per connection on Go's standard library: net.Conn for HTTP/1.1, net/http for h2c; in the open model on a generator pinned to one core its HTTP/1.1 p50 was connections ÷ rate, issue 36)")
	if d.v != nil {
		return func(cfg *loadgen.Config) error {
			if err := checkClient(cfg, *client); err != nil {
				return err
			}
			return checkTransport(cfg, *version, *encoding)
		}
	}
	method := fs.String("http-method", "", "http: a request of your own: its method (default GET, or POST with --http-body); needs --http-path")
	path := fs.String("http-path", "", "http: a request of your own: its path and query, e.g. /api/items?id=7 (only the status is checked: 2xx)")
	var headers headerFlag
	fs.Var(&headers, "http-header", "http: a request of your own: a header 'Name: value' (repeatable)")
	body := fs.String("http-body", "", "http: a request of your own: its body")
	return func(cfg *loadgen.Config) error {
		if err := checkClient(cfg, *client); err != nil {
			return err
		}
		if err := checkTransport(cfg, *version, *encoding); err != nil {
			return err
		}
		if *path == "" {
			if *method != "" || len(headers) > 0 || *body != "" {
				return fmt.Errorf("--http-method, --http-header and --http-body need --http-path (a request of your own)")
			}
			return nil
		}
		if !strings.HasPrefix(*path, "/") || strings.ContainsAny(*path, " \r\n") {
			return fmt.Errorf("--http-path %q: want a path starting with / and without spaces", *path)
		}
		if *method != "" && (strings.ContainsAny(*method, " \r\n:/") || strings.ToUpper(*method) != *method) {
			return fmt.Errorf("--http-method %q: want an upper-case token such as GET or POST", *method)
		}
		cfg.Options[optPath] = *path
		cfg.Options[optMethod] = *method
		cfg.Options[optHeaders] = strings.Join(headers, "\n")
		cfg.Options[optBody] = *body
		return nil
	}
}

// checkTransport checks --http-version and --encoding and moves them into cfg.
func checkTransport(cfg *loadgen.Config, version, encoding string) error {
	switch version {
	case Version11, Version2:
	default:
		return fmt.Errorf("--http-version must be %s or %s, got %q", Version11, Version2, version)
	}
	switch encoding {
	case EncodingJSON, EncodingProtobuf:
	default:
		return fmt.Errorf("--encoding must be %s or %s, got %q", EncodingJSON, EncodingProtobuf, encoding)
	}
	cfg.Options[optVersion] = version
	cfg.Options[optEncoding] = encoding
	return nil
}

// checkClient checks --http-client and moves it into cfg.
func checkClient(cfg *loadgen.Config, client string) error {
	if client != ClientLean && client != ClientStd {
		return fmt.Errorf("--http-client must be %s or %s, got %q", ClientLean, ClientStd, client)
	}
	cfg.Options[optClient] = client
	return nil
}
