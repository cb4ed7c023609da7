package grpcdriver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/driver/h2session"
	"github.com/protobench/protobench/internal/loadgen/netloop"
	"github.com/protobench/protobench/internal/wire/h2wire"
)

// The lean client runs unary calls, in the closed and the open model. grpc-go's client costs about as much CPU
// per call as grpc-go's server, so on equal cores it could not load a server fully. The lean
// client speaks the same protocol — HTTP/2 frames carrying length-prefixed protobuf messages,
// status in the trailers — from prebuilt bytes through package h2wire (frames parsed in place,
// header blocks indexed in HPACK's dynamic table after the first call); every connection of a
// group is a session (package h2session) of one netloop event loop, which writes all the calls that are due in one
// system call per connection. Replies are checked against the contract as grpc-go's path checks
// them. --grpc-client grpc-go selects grpc-go's client instead.

const maxLeanMessage = h2wire.DefaultFrameSize - 5

// Option values of --grpc-client.
const (
	ClientLean   = "lean"
	ClientGRPCGo = "grpc-go"
)

// Multiplexes implements loadgen.Multiplexer: unary calls whose request fits one DATA frame run
// on the lean client, in both models (churning in the closed model only: the churn loop does not
// pace), unless --grpc-client grpc-go.
func (Driver) Multiplexes(cfg *loadgen.Config) bool {
	if (cfg.Open() && cfg.Churns()) || !netloop.Supported || cfg.Options["grpc_client"] == ClientGRPCGo || cfg.Method == contract.MethodEchoStream {
		return false
	}
	msg, _, err := leanRequest(cfg)
	return err == nil && len(msg) <= maxLeanMessage+5
}

// Serve implements loadgen.Multiplexer: one netloop event loop over a group of lean connections.
func (Driver) Serve(ctx context.Context, conns []loadgen.Conn, p *loadgen.Pipe) error {
	return h2session.Serve(ctx, conns, p)
}

// leanRequest is the call's message (with the 5-byte gRPC prefix) and the check of a reply
// message, the same requests and checks as the grpc-go path.
func leanRequest(cfg *loadgen.Config) ([]byte, func([]byte) error, error) {
	if raw := rawCall(cfg); raw != nil {
		msg, err := frameMessage(raw.Request, cfg.Gzip())
		return msg, func([]byte) error { return nil }, err
	}
	w, err := newUnary(nil, cfg)
	if err != nil {
		return nil, nil, err
	}
	body, err := proto.Marshal(w.req)
	if err != nil {
		return nil, nil, err
	}
	msg, err := frameMessage(body, cfg.Gzip())
	if err != nil {
		return nil, nil, err
	}
	check := func(b []byte) error {
		if err := proto.Unmarshal(b, w.resp); err != nil {
			return badResponse("%s reply does not parse: %v", cfg.Method, err)
		}
		return w.check()
	}
	return msg, check, nil
}

// frameMessage puts the gRPC prefix before body: a flag byte (1: compressed) and the length.
// Under gzip the message is compressed once here, as every call sends the same bytes: the
// server inflates each one, and the client's own cost stays out of the measurement.
func frameMessage(body []byte, compress bool) ([]byte, error) {
	flag := byte(0)
	if compress {
		var err error
		if body, err = loadgen.GzipOnce(body); err != nil {
			return nil, err
		}
		flag = 1
	}
	msg := make([]byte, 5+len(body))
	msg[0] = flag
	binary.BigEndian.PutUint32(msg[1:5], uint32(len(body)))
	copy(msg[5:], body)
	return msg, nil
}

// requestFields are the call's request headers. Under compression none they name no encoding
// at all, as a grpc-go client with no compressor registered: a server may then compress
// nothing (connect-go gzips every reply to a client that advertises gzip). Under gzip the
// request is compressed and gzip replies are accepted.
func requestFields(cfg *loadgen.Config) []h2wire.Field {
	path := service + cfg.Method
	if raw := rawCall(cfg); raw != nil {
		path = raw.Path
	}
	fields := []h2wire.Field{
		{Name: ":method", Value: "POST"},
		{Name: ":scheme", Value: "http"},
		{Name: ":path", Value: path},
		{Name: ":authority", Value: cfg.Target.Address},
		{Name: "content-type", Value: "application/grpc"},
		{Name: "te", Value: "trailers"},
	}
	if cfg.Gzip() {
		fields = append(fields, h2wire.Field{Name: "grpc-encoding", Value: "gzip"}, h2wire.Field{Name: "grpc-accept-encoding", Value: "gzip"})
	}
	return append(fields, h2wire.Field{Name: "user-agent", Value: "protobench"})
}

// dialLean opens a lean connection: an h2session whose calls this driver judges.
func dialLean(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (*h2session.Session, error) {
	msg, check, err := leanRequest(cfg)
	if err != nil {
		return nil, err
	}
	s := h2session.New(h2session.Protocol{
		Address:   cfg.Target.Address,
		Slots:     cfg.Concurrency,
		Fields:    requestFields(cfg),
		Body:      msg,
		Keep:      []string{"grpc-status", "grpc-message"},
		Outcome:   func(st *h2session.Stream) error { return outcome(st, check, wire) },
		LostCode:  lostCode,
		GoingAway: errGoingAway,
		Handshake: "gRPC connection not ready: no HTTP/2 SETTINGS",
		TLS:       cfg.TLS,
	}, wire)
	return s, s.Connect(ctx)
}

func lostCode(cause error) string {
	switch {
	case errors.Is(cause, netloop.ErrClosed):
		return loadgen.CodeEOF
	case errors.Is(cause, h2wire.ErrProtocol):
		return "grpc:" + codes.Internal.String()
	}
	return loadgen.Classify(cause)
}

var errGoingAway = loadgen.ProtocolError("grpc:"+codes.Unavailable.String(), errorString("the server is going away (GOAWAY)"))

type errorString string

func (e errorString) Error() string { return string(e) }

// outcome judges a finished call the way a gRPC client would; check judges the reply message,
// and wire counts a compressed one.
func outcome(s *h2session.Stream, check func([]byte) error, wire *loadgen.WireBytes) error {
	grpcStatus, grpcMsg := -1, ""
	for _, f := range s.Fields {
		switch f.Name {
		case "grpc-status":
			if v, err := strconv.Atoi(f.Value); err == nil {
				grpcStatus = v
			}
		case "grpc-message":
			grpcMsg = f.Value
		}
	}
	switch {
	case s.RST:
		code := codes.Internal
		switch s.RSTCode {
		case h2wire.RefusedStream:
			code = codes.Unavailable
		case h2wire.Cancel:
			code = codes.Canceled
		case h2wire.EnhanceYourCalm:
			code = codes.ResourceExhausted
		}
		return loadgen.ProtocolError("grpc:"+code.String(), fmt.Errorf("stream reset (HTTP/2 error %d)", s.RSTCode))
	case grpcStatus < 0:
		if s.Status != 0 && s.Status != 200 {
			return loadgen.ProtocolError("grpc:"+httpStatusCode(s.Status).String(), fmt.Errorf("HTTP status %d", s.Status))
		}
		return loadgen.ProtocolError("grpc:"+codes.Internal.String(), errors.New("the call ended without grpc-status"))
	case grpcStatus != 0:
		return loadgen.ProtocolError("grpc:"+codes.Code(grpcStatus).String(), errors.New(grpcMsg))
	}
	d := s.Data
	if len(d) < 5 || d[0] > 1 || int(binary.BigEndian.Uint32(d[1:5])) != len(d)-5 {
		return badResponse("reply is not one gRPC message (%d bytes)", len(d))
	}
	if d[0] == 1 {
		// Compressed: gzip is the only encoding this client reads. Counted even under
		// compression none, where the server should not have compressed: the record then
		// shows it beside the server's own count.
		if wire != nil {
			wire.CompressedReplies.Add(1)
		}
		msg, f, err := loadgen.Inflate(d[5:])
		if err != nil {
			return badResponse("compressed reply does not inflate as gzip: %v", err)
		}
		defer f.Release()
		return check(msg)
	}
	return check(d[5:])
}

// httpStatusCode maps an HTTP status without grpc-status to a gRPC code, as gRPC clients do.
func httpStatusCode(status int) codes.Code {
	switch status {
	case 400:
		return codes.Internal
	case 401:
		return codes.Unauthenticated
	case 403:
		return codes.PermissionDenied
	case 404:
		return codes.Unimplemented
	case 429, 502, 503, 504:
		return codes.Unavailable
	}
	return codes.Unknown
}
