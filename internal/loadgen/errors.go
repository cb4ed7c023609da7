package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
)

// Error codes shared by drivers. Protocol codes are "<protocol>:<code>" (grpc:Unavailable,
// http:503, netrpc:error, zmq:ERR); transport codes are "transport:<what>". They are bounded, so
// they can be Prometheus label values and JSON keys.
const (
	CodeOK                = "OK"
	CodeConnRefused       = "transport:connection-refused"
	CodeConnReset         = "transport:connection-reset"
	CodeEOF               = "transport:eof"
	CodeTimeout           = "transport:timeout"
	CodeClosed            = "transport:closed"
	CodeTransport         = "transport:other"
	CodeBadResponse       = "bad-response" // the reply parsed but was not what the contract says
	CodeCanceled          = "canceled"     // the run ended while the request was in flight
	maxDistinctErrorCodes = 64
)

// CodedError is an error that carries its protocol's code for classification.
type CodedError struct {
	Code string
	Err  error
	// Lost means the connection is unusable: the worker reconnects before its next request.
	Lost bool
}

func (e *CodedError) Error() string {
	if e.Err == nil {
		return e.Code
	}
	return e.Code + ": " + e.Err.Error()
}

func (e *CodedError) Unwrap() error { return e.Err }

// ProtocolError is a failed request the server answered: the connection is still fine.
func ProtocolError(code string, err error) error { return &CodedError{Code: code, Err: err} }

// ConnLost marks err as the loss of the connection: the engine reconnects (within the connect
// timeout) before the worker's next request, and ends the run if that fails.
func ConnLost(err error) error {
	var ce *CodedError
	if errors.As(err, &ce) {
		return &CodedError{Code: ce.Code, Err: ce.Err, Lost: true}
	}
	return &CodedError{Code: Classify(err), Err: err, Lost: true}
}

// Classify returns the code of err: its CodedError code when it has one, else a transport code
// recognised from the system error.
func Classify(err error) string {
	if err == nil {
		return CodeOK
	}
	var ce *CodedError
	if errors.As(err, &ce) {
		return ce.Code
	}
	switch {
	case errors.Is(err, context.Canceled):
		return CodeCanceled
	case errors.Is(err, syscall.ECONNREFUSED):
		return CodeConnRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return CodeConnReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return CodeEOF
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return CodeTimeout
	case errors.Is(err, net.ErrClosed):
		return CodeClosed
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return CodeTimeout
	}
	return CodeTransport
}

// IsConnLost reports whether err means the connection cannot carry another request: marked so by
// the driver, or a transport error.
func IsConnLost(err error) bool {
	if err == nil {
		return false
	}
	var ce *CodedError
	if errors.As(err, &ce) {
		return ce.Lost
	}
	switch Classify(err) {
	case CodeConnRefused, CodeConnReset, CodeEOF, CodeClosed, CodeTransport, CodeTimeout:
		return true
	}
	return false
}

// DialError is a failure to reach the target, naming the address and the time allowed.
type DialError struct {
	Address string
	Err     error
}

func (e *DialError) Error() string {
	return fmt.Sprintf("cannot connect to %s: %v", e.Address, e.Err)
}

func (e *DialError) Unwrap() error { return e.Err }
