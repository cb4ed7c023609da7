// Package zmqwire is the framing protobench speaks over ZeroMQ, shared by the server
// (internal/server/zmqserver) and the load generator's clients, so both sides agree byte for byte.
//
// Request/reply runs against a ROUTER socket. A request is four frames:
//
//	[empty][method][request-id][body]
//
// method is a contract method name ("Echo", "GetUser", "Multiply", "Divide") or "Publish";
// request-id is 8 bytes, a big-endian uint64 the client chooses and the server copies into the
// reply, so a DEALER client can keep many requests outstanding on one connection and match
// replies that come back in any order; body is the contract's protobuf request message
// (EchoRequest, GetUserRequest, ArithRequest; Publish takes an EchoRequest).
//
// A DEALER client sends all four frames itself. A REQ socket adds the empty delimiter on its own,
// so a REQ client sends only [method][request-id][body]. The ROUTER sees
// [identity][empty][method][request-id][body] either way.
//
// A reply is:
//
//	[empty][status][request-id][body]
//
// status is "OK" or "ERR". With OK, body is the contract's protobuf response (EchoResponse, User,
// MultiplyResponse, DivideResponse; Publish replies with an empty body). With ERR, body is a UTF-8
// error message: unknown method, payload above the limit, a body that is not the expected
// protobuf message, division by zero, or a request with the wrong number of frames (the
// request-id is then whatever the request carried if it was 8 bytes, otherwise 8 zero bytes). A
// REQ client receives the reply without the empty frame; DecodeReply accepts both forms.
//
// Fan-out: the PUB socket sends each published payload as one frame of raw payload bytes, with no
// topic prefix, so subscribers subscribe to "". The pipeline (seed 002): a PUSH client sends
// messages of one frame each, raw bytes, to the PULL sink, which only counts messages and bytes.
package zmqwire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MethodPublish asks the server to publish the request's payload on its PUB socket.
const MethodPublish = "Publish"

// Reply statuses.
const (
	StatusOK  = "OK"
	StatusErr = "ERR"
)

// IDBytes is the length of the request-id frame.
const IDBytes = 8

// Request is a decoded request.
type Request struct {
	Method string
	ID     uint64
	Body   []byte
}

// Reply is a decoded reply.
type Reply struct {
	Status string // StatusOK or StatusErr
	ID     uint64
	Body   []byte // the response message, or the error text with StatusErr
}

// Err returns the error an ERR reply carries, or nil for OK.
func (r Reply) Err() error {
	if r.Status == StatusOK {
		return nil
	}
	return &RemoteError{Message: string(r.Body)}
}

// RemoteError is an error the server reported in an ERR reply.
type RemoteError struct{ Message string }

// Error returns the server's message, marked as coming from the server.
func (e *RemoteError) Error() string { return "ZeroMQ server: " + e.Message }

// ID encodes a request id as its 8-byte frame.
func ID(id uint64) []byte {
	b := make([]byte, IDBytes)
	binary.BigEndian.PutUint64(b, id)
	return b
}

// EncodeRequest returns the frames a DEALER client sends: [empty][method][id][body].
func EncodeRequest(method string, id uint64, body []byte) [][]byte {
	return [][]byte{{}, []byte(method), ID(id), body}
}

// EncodeREQRequest returns the frames a REQ client sends; its socket adds the empty delimiter.
func EncodeREQRequest(method string, id uint64, body []byte) [][]byte {
	return [][]byte{[]byte(method), ID(id), body}
}

// ErrFraming is wrapped by every error about the shape of a message.
var ErrFraming = errors.New("bad framing")

// DecodeRequest parses a request as the ROUTER sees it after the identity frame:
// [empty][method][id][body].
func DecodeRequest(frames [][]byte) (Request, error) {
	if len(frames) != 4 {
		return Request{}, fmt.Errorf("%w: want 4 frames [empty][method][request-id][body] after the identity, got %d", ErrFraming, len(frames))
	}
	if len(frames[0]) != 0 {
		return Request{}, fmt.Errorf("%w: first frame must be the empty delimiter, got %d bytes", ErrFraming, len(frames[0]))
	}
	if len(frames[2]) != IDBytes {
		return Request{}, fmt.Errorf("%w: request-id must be %d bytes, got %d", ErrFraming, IDBytes, len(frames[2]))
	}
	return Request{Method: string(frames[1]), ID: binary.BigEndian.Uint64(frames[2]), Body: frames[3]}, nil
}

// EncodeReply returns the reply frames after the identity: [empty][status][id][body].
func EncodeReply(status string, id uint64, body []byte) [][]byte {
	return [][]byte{{}, []byte(status), ID(id), body}
}

// DecodeReply parses a reply as a DEALER ([empty][status][id][body]) or a REQ client
// ([status][id][body]) receives it.
func DecodeReply(frames [][]byte) (Reply, error) {
	if len(frames) == 4 {
		if len(frames[0]) != 0 {
			return Reply{}, fmt.Errorf("%w: first reply frame must be the empty delimiter", ErrFraming)
		}
		frames = frames[1:]
	}
	if len(frames) != 3 {
		return Reply{}, fmt.Errorf("%w: want reply [empty][status][request-id][body], got %d frames", ErrFraming, len(frames))
	}
	st := string(frames[0])
	if st != StatusOK && st != StatusErr {
		return Reply{}, fmt.Errorf("%w: status %q, want OK or ERR", ErrFraming, st)
	}
	if len(frames[1]) != IDBytes {
		return Reply{}, fmt.Errorf("%w: request-id must be %d bytes, got %d", ErrFraming, IDBytes, len(frames[1]))
	}
	return Reply{Status: st, ID: binary.BigEndian.Uint64(frames[1]), Body: frames[2]}, nil
}
