package grpcdriver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc"

	"github.com/protobench/protobench/internal/loadgen"
)

// RawCall is a call the user declares instead of a contract method (a target of their own): the
// full method path and the request message already encoded. Only grpc-status is checked.
type RawCall struct {
	Path    string // /package.Service/Method
	Request []byte // the request message, protobuf-encoded
}

// Options keys that carry a RawCall in loadgen.Config.
const (
	OptionRawPath    = "grpc_raw_path"
	OptionRawRequest = "grpc_raw_request"
)

// SetRawCall makes cfg call rc instead of a contract method. The path may be given as
// package.Service/Method too.
func SetRawCall(cfg *loadgen.Config, rc RawCall) error {
	path := rc.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	if svc, m, ok := strings.Cut(path[1:], "/"); !ok || svc == "" || m == "" || strings.Contains(m, "/") {
		return fmt.Errorf("gRPC call %q: want package.Service/Method", rc.Path)
	}
	if cfg.Options == nil {
		cfg.Options = map[string]string{}
	}
	cfg.Options[OptionRawPath] = path
	cfg.Options[OptionRawRequest] = string(rc.Request)
	return nil
}

// rawCall is cfg's RawCall, or nil for a contract method.
func rawCall(cfg *loadgen.Config) *RawCall {
	path, ok := cfg.Options[OptionRawPath]
	if !ok {
		return nil
	}
	return &RawCall{Path: path, Request: []byte(cfg.Options[OptionRawRequest])}
}

// rawCodec sends prebuilt bytes and keeps the reply's bytes unparsed, for grpc-go.
type rawCodec struct{}

type rawMessage struct{ b []byte }

func (rawCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(*rawMessage)
	if !ok {
		return nil, errors.New("raw codec: not a raw message")
	}
	return m.b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	m, ok := v.(*rawMessage)
	if !ok {
		return errors.New("raw codec: not a raw message")
	}
	m.b = append(m.b[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// rawWorker runs a RawCall through grpc-go (open model).
type rawWorker struct {
	cc   *grpc.ClientConn
	call *RawCall
	req  rawMessage
	resp rawMessage
}

func (w *rawWorker) Do(ctx context.Context) error {
	if err := w.cc.Invoke(ctx, w.call.Path, &w.req, &w.resp, grpc.ForceCodec(rawCodec{})); err != nil {
		return classify(err)
	}
	return nil
}

func (w *rawWorker) Close() error { return nil }
