// Package connectdriver is the load generator's driver for the Connect protocol (scheme
// connect://, connectrpc.com): unary calls as plain HTTP POSTs to /protobench.v1.Bench/<Method>
// with Connect-Protocol-Version: 1 and a bare message body, application/proto (--encoding
// protobuf) or application/json (--encoding json, protobuf's JSON mapping), over HTTP/1.1 or
// h2c (--http-version). A Connect unary call is one request and one response with no framing,
// so it runs on the HTTP driver's lean loops (package httpdriver, a Variant), the same code that
// drives REST: the two differ only in their request bytes.
//
// Streaming: the contract's EchoStream is bidirectional, which the Connect protocol carries only
// as an enveloped HTTP/2 stream, not as the server-streaming POST this driver could send; the
// gRPC driver drives EchoStream through connect-go's gRPC protocol instead (target
// connect-grpc). A non-200 answer is an error coded http:<status> (Connect maps its codes onto
// HTTP statuses: 400 invalid_argument, 429 resource_exhausted, 404 unimplemented).
package connectdriver

import (
	"bytes"
	"encoding/base64"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/contract/benchpb/benchpbconnect"
	"github.com/protobench/protobench/internal/loadgen"
	httpdriver "github.com/protobench/protobench/internal/loadgen/driver/http"
	"github.com/protobench/protobench/internal/wire/h2wire"
)

// Scheme is the driver's target scheme.
const Scheme = "connect"

// Content types of the Connect protocol's unary calls.
const (
	ContentTypeProto = "application/proto"
	ContentTypeJSON  = "application/json"
)

// Methods are the calls it makes; GetUser is the default, as on REST.
var Methods = []string{contract.MethodGetUser, contract.MethodEcho, contract.MethodMultiply, contract.MethodDivide}

func init() {
	loadgen.Register(Scheme, httpdriver.New(httpdriver.Variant{TargetName: "connect", Methods: Methods, Build: Build}))
}

var procedures = map[string]string{
	contract.MethodEcho:     benchpbconnect.BenchEchoProcedure,
	contract.MethodGetUser:  benchpbconnect.BenchGetUserProcedure,
	contract.MethodMultiply: benchpbconnect.BenchMultiplyProcedure,
	contract.MethodDivide:   benchpbconnect.BenchDivideProcedure,
}

// codec is one of the two encodings.
type codec struct {
	contentType string
	marshal     func(proto.Message) ([]byte, error)
	unmarshal   func([]byte, proto.Message) error
}

var (
	protoCodec = codec{ContentTypeProto, proto.Marshal, proto.Unmarshal}
	jsonCodec  = codec{ContentTypeJSON, protojson.Marshal, protojson.Unmarshal}
)

// Build is the Connect call for cfg's method, encoding and payload.
func Build(cfg *loadgen.Config) (httpdriver.Call, error) {
	c := protoCodec
	if cfg.Options["encoding"] == httpdriver.EncodingJSON {
		c = jsonCodec
	}
	var req, resp proto.Message
	var check func(proto.Message) error
	switch cfg.Method {
	case contract.MethodEcho:
		n := cfg.PayloadBytes
		req, resp = &benchpb.EchoRequest{Payload: contract.Payload(n)}, &benchpb.EchoResponse{}
		check = func(m proto.Message) error {
			if got := len(m.(*benchpb.EchoResponse).GetPayload()); got != n {
				return fmt.Errorf("echo returned %d bytes, sent %d", got, n)
			}
			return nil
		}
	case contract.MethodMultiply:
		want := contract.Multiply(contract.RequestA, contract.RequestB)
		req, resp = &benchpb.ArithRequest{A: contract.RequestA, B: contract.RequestB}, &benchpb.MultiplyResponse{}
		check = func(m proto.Message) error {
			if got := m.(*benchpb.MultiplyResponse).GetProduct(); got != want {
				return fmt.Errorf("Multiply returned %d, want %d", got, want)
			}
			return nil
		}
	case contract.MethodDivide:
		q, r, _ := contract.Divide(contract.RequestA, contract.RequestB)
		req, resp = &benchpb.ArithRequest{A: contract.RequestA, B: contract.RequestB}, &benchpb.DivideResponse{}
		check = func(m proto.Message) error {
			d := m.(*benchpb.DivideResponse)
			if d.GetQuotient() != q || d.GetRemainder() != r {
				return fmt.Errorf("Divide returned %d rem %d, want %d rem %d", d.GetQuotient(), d.GetRemainder(), q, r)
			}
			return nil
		}
	case contract.MethodGetUser:
		want := contract.UserByID(contract.RequestUserID)
		req, resp = &benchpb.GetUserRequest{Id: contract.RequestUserID}, &benchpb.User{}
		check = func(m proto.Message) error {
			u := m.(*benchpb.User)
			if u.GetId() != want.ID || u.GetName() != want.Name {
				return fmt.Errorf("GetUser(%d) returned id %d name %q", contract.RequestUserID, u.GetId(), u.GetName())
			}
			return nil
		}
	default:
		return httpdriver.Call{}, fmt.Errorf("--method %q: the connect driver calls %v", cfg.Method, Methods)
	}
	body, err := c.marshal(req)
	if err != nil {
		return httpdriver.Call{}, err
	}
	call := httpdriver.Call{
		Method: "POST", Path: procedures[cfg.Method], Body: body,
		Headers: []h2wire.Field{{Name: "Content-Type", Value: c.contentType}, {Name: "Connect-Protocol-Version", Value: "1"}},
		Check: func(b []byte) error {
			m := resp.ProtoReflect().New().Interface()
			if err := c.unmarshal(b, m); err != nil {
				return fmt.Errorf("%s reply is not a %s %s: %v", cfg.Method, c.contentType, m.ProtoReflect().Descriptor().FullName(), err)
			}
			return check(m)
		},
	}
	if c.contentType == ContentTypeJSON && cfg.Method == contract.MethodEcho {
		// Decoding a large base64 payload would cost the generator more than the server's
		// encoding of it; the reply must carry the payload's base64, which is the same judgement.
		want := []byte(base64.StdEncoding.EncodeToString(contract.Payload(cfg.PayloadBytes)))
		call.Check = func(b []byte) error {
			if !bytes.Contains(b, want) || !bytes.Contains(b, []byte(`"payload"`)) && len(want) > 0 {
				return fmt.Errorf("echo reply of %d bytes does not carry the %d-byte payload", len(b), cfg.PayloadBytes)
			}
			return nil
		}
	}
	return call, nil
}
