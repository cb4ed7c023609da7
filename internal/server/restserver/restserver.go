// Package restserver serves the contract over HTTP/1.1 with net/http and encoding/json, the way
// seed 003 wrote its REST side:
//
//	GET  /v1/users/{id}  -> {"id","name","email","age"}
//	POST /v1/echo        body: the raw payload (application/octet-stream), echoed back raw, so the
//	                     bytes on the wire are the same payload bytes the gRPC server echoes
//	POST /v1/multiply    {"a","b"} -> {"product"}
//	POST /v1/divide      {"a","b"} -> {"quotient","remainder"}
//
// Every error is a JSON body {"error": "..."}: 400 for malformed JSON, a bad id or division by
// zero, 413 for a body above the payload limit, 404 for an unknown path and 405 (with Allow) for a
// known path with the wrong method. Routing is a switch on the path rather than a ServeMux
// pattern because the mux's own 404/405 answers are plain text.
//
// The metrics' code label is the HTTP status ("200", "413"); the method label is the contract
// method, or "unknown" for paths outside the API.
package restserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/serverkit"
)

// Protocol is the protocol label and server name.
const Protocol = "rest"

// DefaultListen is the REST server's default address.
const DefaultListen = ":8080"

// API paths.
const (
	PathUsers    = "/v1/users/"
	PathEcho     = "/v1/echo"
	PathMultiply = "/v1/multiply"
	PathDivide   = "/v1/divide"
)

// ArithRequest is the body of /v1/multiply and /v1/divide.
type ArithRequest struct {
	A *int64 `json:"a"`
	B *int64 `json:"b"`
}

// MultiplyResponse is the body /v1/multiply returns.
type MultiplyResponse struct {
	Product int64 `json:"product"`
}

// DivideResponse is the body /v1/divide returns.
type DivideResponse struct {
	Quotient  int64 `json:"quotient"`
	Remainder int64 `json:"remainder"`
}

// ErrorResponse is the body of every error answer.
type ErrorResponse struct {
	Error string `json:"error"`
}

// maxArithBodyBytes caps the JSON bodies of multiply and divide: two int64 in JSON fit in well
// under 100 bytes, so anything near this is not a request worth parsing.
const maxArithBodyBytes = 64 << 10

// Options are the server's settings.
type Options struct {
	MaxPayloadBytes int
	// ReadHeaderTimeout bounds how long a connection may take to send request headers, the one
	// guard net/http needs against clients that connect and never finish a request.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long; 0 keeps them open (benchmarks
	// reuse connections across long pauses such as a warm-up gap).
	IdleTimeout time.Duration
}

// Server is the REST server.
type Server struct {
	http       *http.Server
	metrics    *serverkit.Metrics
	maxPayload int
}

// New builds the server. Metrics may be nil.
func New(opts Options, m *serverkit.Metrics) *Server {
	s := &Server{metrics: m, maxPayload: opts.MaxPayloadBytes}
	if s.maxPayload <= 0 {
		s.maxPayload = contract.DefaultMaxPayloadBytes
	}
	if opts.ReadHeaderTimeout <= 0 {
		opts.ReadHeaderTimeout = time.Minute
	}
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
	}
	return s
}

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown closes the listener and idle connections, waits for active requests until ctx ends,
// then closes the rest.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if err != nil {
		s.http.Close()
	}
	return err
}

// Spec describes the REST server to serverkit.
var Spec = serverkit.Spec{
	Protocol:      Protocol,
	DefaultListen: DefaultListen,
	Declare: func(fs *serverkit.Flags) serverkit.Builder {
		idle := fs.Duration("http-idle-timeout", "PROTOBENCH_HTTP_IDLE_TIMEOUT", 0,
			"close keep-alive connections idle this long; 0 keeps them (net/http default)")
		header := fs.Duration("http-read-header-timeout", "PROTOBENCH_HTTP_READ_HEADER_TIMEOUT", time.Minute,
			"time a connection has to send its request headers")
		return func(cfg serverkit.Config, m *serverkit.Metrics) (serverkit.Service, error) {
			return serverkit.Bind(cfg.Listen, New(Options{
				MaxPayloadBytes:   cfg.MaxPayloadBytes,
				ReadHeaderTimeout: *header,
				IdleTimeout:       *idle,
			}, m))
		}
	},
}

// ServeHTTP routes a request and records its metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	method, code := s.route(w, r)
	if s.metrics != nil {
		s.metrics.ObserveRequest(method, strconv.Itoa(code), time.Since(start))
	}
}

// route dispatches and returns the contract method and the status written.
func (s *Server) route(w http.ResponseWriter, r *http.Request) (string, int) {
	p := r.URL.Path
	switch {
	case p == PathEcho:
		if r.Method != http.MethodPost {
			return contract.MethodEcho, methodNotAllowed(w, http.MethodPost)
		}
		return contract.MethodEcho, s.echo(w, r)
	case p == PathMultiply:
		if r.Method != http.MethodPost {
			return contract.MethodMultiply, methodNotAllowed(w, http.MethodPost)
		}
		return contract.MethodMultiply, s.arith(w, r, false)
	case p == PathDivide:
		if r.Method != http.MethodPost {
			return contract.MethodDivide, methodNotAllowed(w, http.MethodPost)
		}
		return contract.MethodDivide, s.arith(w, r, true)
	case strings.HasPrefix(p, PathUsers):
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			return contract.MethodGetUser, methodNotAllowed(w, http.MethodGet)
		}
		return contract.MethodGetUser, s.getUser(w, p[len(PathUsers):])
	default:
		return "unknown", writeError(w, http.StatusNotFound, fmt.Sprintf("no such path %q; the API is GET %s{id}, POST %s, POST %s, POST %s", p, PathUsers, PathEcho, PathMultiply, PathDivide))
	}
}

func (s *Server) getUser(w http.ResponseWriter, idText string) int {
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		return writeError(w, http.StatusBadRequest, fmt.Sprintf("user id %q: want a decimal int64", idText))
	}
	return writeJSON(w, http.StatusOK, contract.UserByID(id))
}

func (s *Server) echo(w http.ResponseWriter, r *http.Request) int {
	if r.ContentLength > int64(s.maxPayload) {
		return writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("payload of %d bytes exceeds the limit of %d", r.ContentLength, s.maxPayload))
	}
	body := http.MaxBytesReader(w, r.Body, int64(s.maxPayload))
	var payload []byte
	var err error
	if r.ContentLength >= 0 {
		// The length is known and within the limit: read into one exact buffer, no regrowth.
		payload = make([]byte, r.ContentLength)
		_, err = io.ReadFull(body, payload)
	} else {
		var buf bytes.Buffer
		_, err = buf.ReadFrom(body)
		payload = buf.Bytes()
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("payload exceeds the limit of %d bytes", s.maxPayload))
		}
		return writeError(w, http.StatusBadRequest, "reading body: "+err.Error())
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
	w.WriteHeader(http.StatusOK)
	w.Write(payload)
	return http.StatusOK
}

func (s *Server) arith(w http.ResponseWriter, r *http.Request, divide bool) int {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxArithBodyBytes))
	var req ArithRequest
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body exceeds %d bytes", maxArithBodyBytes))
		}
		return writeError(w, http.StatusBadRequest, `malformed JSON: want {"a": <int64>, "b": <int64>}: `+err.Error())
	}
	if dec.More() {
		return writeError(w, http.StatusBadRequest, `malformed JSON: trailing data after {"a": <int64>, "b": <int64>}`)
	}
	if req.A == nil || req.B == nil {
		return writeError(w, http.StatusBadRequest, `missing field: want {"a": <int64>, "b": <int64>}`)
	}
	if !divide {
		return writeJSON(w, http.StatusOK, MultiplyResponse{Product: contract.Multiply(*req.A, *req.B)})
	}
	q, rem, err := contract.Divide(*req.A, *req.B)
	if err != nil {
		return writeError(w, http.StatusBadRequest, err.Error())
	}
	return writeJSON(w, http.StatusOK, DivideResponse{Quotient: q, Remainder: rem})
}

func methodNotAllowed(w http.ResponseWriter, allow string) int {
	w.Header().Set("Allow", allow)
	return writeError(w, http.StatusMethodNotAllowed, "method not allowed; use "+allow)
}

func writeError(w http.ResponseWriter, code int, msg string) int {
	return writeJSON(w, code, ErrorResponse{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"error":"encoding response"}`)
	}
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	w.Write(b)
	return code
}
