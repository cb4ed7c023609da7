package httpdriver

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/wire/h2wire"
)

// Encodings of --encoding, and the REST server's protobuf media type.
const (
	EncodingJSON     = "json"
	EncodingProtobuf = "protobuf"
	protobufType     = "application/x-protobuf"
)

// HTTP versions of --http-version.
const (
	Version11 = "1.1"
	Version2  = "2"
)

// Options keys of the driver's flags in loadgen.Config.
const (
	optVersion  = "http_version"
	optEncoding = "encoding"
	optMethod   = "http_method"
	optPath     = "http_path"
	optHeaders  = "http_headers" // "Name: value" lines
	optBody     = "http_body"
	optClient   = "http_client"
)

// Clients of --http-client.
const (
	ClientLean = "lean" // the event loops (netloop)
	ClientStd  = "std"  // a goroutine per connection: net.Conn (HTTP/1.1), net/http (h2c)
)

// request is one call, independent of the HTTP version.
type request struct {
	method, path string
	headers      []h2wire.Field // besides Host and Content-Length; names as given
	body         []byte
	check        func(body []byte) error // judges a 2xx body
}

// custom reports whether cfg is a user-declared request (--http-path).
func custom(cfg *loadgen.Config) bool { return cfg.Options[optPath] != "" }

// customName is the method name recorded for a user-declared request.
func customName(cfg *loadgen.Config) string {
	return customMethod(cfg) + " " + cfg.Options[optPath]
}

func customMethod(cfg *loadgen.Config) string {
	if m := cfg.Options[optMethod]; m != "" {
		return m
	}
	if cfg.Options[optBody] != "" {
		return "POST"
	}
	return "GET"
}

// buildRequest is the call cfg asks for: a contract method in JSON or protobuf, or the user's.
func buildRequest(cfg *loadgen.Config) (request, error) {
	if custom(cfg) {
		r := request{method: customMethod(cfg), path: cfg.Options[optPath], body: []byte(cfg.Options[optBody]), check: func([]byte) error { return nil }}
		for _, line := range strings.Split(cfg.Options[optHeaders], "\n") {
			if name, value, ok := strings.Cut(line, ":"); ok {
				r.headers = append(r.headers, h2wire.Field{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)})
			}
		}
		return r, nil
	}
	if cfg.Options[optEncoding] == EncodingProtobuf {
		return protobufRequest(cfg)
	}
	return jsonRequest(cfg), nil
}

func jsonRequest(cfg *loadgen.Config) request {
	arith := fmt.Appendf(nil, `{"a":%d,"b":%d}`, contract.RequestA, contract.RequestB)
	jsonBody := []h2wire.Field{{Name: "Content-Type", Value: "application/json"}}
	switch cfg.Method {
	case contract.MethodEcho:
		n := cfg.PayloadBytes
		return request{method: "POST", path: "/v1/echo", headers: []h2wire.Field{{Name: "Content-Type", Value: "application/octet-stream"}},
			body: contract.Payload(n), check: func(body []byte) error {
				if len(body) != n {
					return fmt.Errorf("echo returned %d bytes, sent %d", len(body), n)
				}
				return nil
			}}
	case contract.MethodMultiply:
		return request{method: "POST", path: "/v1/multiply", headers: jsonBody, body: arith,
			check: contains(fmt.Sprintf(`"product":%d`, contract.Multiply(contract.RequestA, contract.RequestB)))}
	case contract.MethodDivide:
		q, _, _ := contract.Divide(contract.RequestA, contract.RequestB)
		return request{method: "POST", path: "/v1/divide", headers: jsonBody, body: arith,
			check: contains(fmt.Sprintf(`"quotient":%d`, q))}
	}
	return request{method: "GET", path: "/v1/users/" + strconv.Itoa(contract.RequestUserID),
		check: contains(fmt.Sprintf(`"name":%q`, contract.UserByID(contract.RequestUserID).Name))}
}

// protobufRequest sends and expects the messages the gRPC server uses.
func protobufRequest(cfg *loadgen.Config) (request, error) {
	accept := []h2wire.Field{{Name: "Accept", Value: protobufType}}
	withBody := []h2wire.Field{{Name: "Content-Type", Value: protobufType}, {Name: "Accept", Value: protobufType}}
	arith, err := proto.Marshal(&benchpb.ArithRequest{A: contract.RequestA, B: contract.RequestB})
	if err != nil {
		return request{}, err
	}
	parse := func(body []byte, m proto.Message) error {
		if err := proto.Unmarshal(body, m); err != nil {
			return fmt.Errorf("%s reply is not a protobuf %s: %v", cfg.Method, m.ProtoReflect().Descriptor().FullName(), err)
		}
		return nil
	}
	switch cfg.Method {
	case contract.MethodEcho:
		n := cfg.PayloadBytes
		body, err := proto.Marshal(&benchpb.EchoRequest{Payload: contract.Payload(n)})
		if err != nil {
			return request{}, err
		}
		return request{method: "POST", path: "/v1/echo", headers: withBody, body: body, check: func(b []byte) error {
			var r benchpb.EchoResponse
			if err := parse(b, &r); err != nil {
				return err
			}
			if len(r.Payload) != n {
				return fmt.Errorf("echo returned %d bytes, sent %d", len(r.Payload), n)
			}
			return nil
		}}, nil
	case contract.MethodMultiply:
		want := contract.Multiply(contract.RequestA, contract.RequestB)
		return request{method: "POST", path: "/v1/multiply", headers: withBody, body: arith, check: func(b []byte) error {
			var r benchpb.MultiplyResponse
			if err := parse(b, &r); err != nil {
				return err
			}
			if r.Product != want {
				return fmt.Errorf("Multiply returned %d", r.Product)
			}
			return nil
		}}, nil
	case contract.MethodDivide:
		q, rem, _ := contract.Divide(contract.RequestA, contract.RequestB)
		return request{method: "POST", path: "/v1/divide", headers: withBody, body: arith, check: func(b []byte) error {
			var r benchpb.DivideResponse
			if err := parse(b, &r); err != nil {
				return err
			}
			if r.Quotient != q || r.Remainder != rem {
				return fmt.Errorf("Divide returned %d rem %d", r.Quotient, r.Remainder)
			}
			return nil
		}}, nil
	}
	want := contract.UserByID(contract.RequestUserID)
	return request{method: "GET", path: "/v1/users/" + strconv.Itoa(contract.RequestUserID), headers: accept, check: func(b []byte) error {
		var u benchpb.User
		if err := parse(b, &u); err != nil {
			return err
		}
		if u.Id != want.ID || u.Name != want.Name {
			return fmt.Errorf("GetUser(%d) returned id %d name %q", contract.RequestUserID, u.Id, u.Name)
		}
		return nil
	}}, nil
}

// http1 is the request's HTTP/1.1 bytes.
func (r request) http1(host string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: protobench\r\n", r.method, r.path, host)
	for _, h := range r.headers {
		fmt.Fprintf(&b, "%s: %s\r\n", h.Name, h.Value)
	}
	if len(r.body) > 0 || r.method == "POST" || r.method == "PUT" || r.method == "PATCH" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(r.body))
	}
	b.WriteString("\r\n")
	b.Write(r.body)
	return b.Bytes()
}

// http2 is the request's HTTP/2 header fields (names in lower case, as HTTP/2 requires).
func (r request) http2(authority string) []h2wire.Field {
	f := []h2wire.Field{
		{Name: ":method", Value: r.method},
		{Name: ":scheme", Value: "http"},
		{Name: ":path", Value: r.path},
		{Name: ":authority", Value: authority},
		{Name: "user-agent", Value: "protobench"},
	}
	for _, h := range r.headers {
		f = append(f, h2wire.Field{Name: strings.ToLower(h.Name), Value: h.Value})
	}
	if len(r.body) > 0 {
		f = append(f, h2wire.Field{Name: "content-length", Value: strconv.Itoa(len(r.body))})
	}
	return f
}

func contains(s string) func([]byte) error {
	want := []byte(s)
	return func(body []byte) error {
		if !bytes.Contains(body, want) {
			return fmt.Errorf("reply %q does not contain %s", truncate(body), want)
		}
		return nil
	}
}

func truncate(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}
