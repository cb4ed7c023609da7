// Package restserver serves the contract over HTTP with net/http, the way seed 003 wrote its REST
// side, on one port that speaks both HTTP/1.1 and HTTP/2 cleartext with prior knowledge (h2c,
// through http.Server.Protocols):
//
//	GET  /v1/users/{id}  -> User
//	POST /v1/echo        EchoRequest -> EchoResponse
//	POST /v1/multiply    ArithRequest {"a","b"} -> MultiplyResponse {"product"}
//	POST /v1/divide      ArithRequest {"a","b"} -> DivideResponse {"quotient","remainder"}
//
// Bodies come in two encodings. JSON is the default: Echo's body is then the raw payload
// (application/octet-stream) in both directions, so the bytes on the wire are the same payload
// bytes the gRPC server echoes, and the other bodies are JSON objects. Protobuf
// (application/x-protobuf) uses the very messages gRPC uses (package benchpb). The request body's
// encoding is its Content-Type; the response's is protobuf when Accept names
// application/x-protobuf, JSON (raw bytes for Echo) when Accept names JSON or octet-stream, and
// otherwise the request's own encoding (a GET without Accept gets JSON).
//
// Every error is a JSON body {"error": "..."} whatever the encoding: 400 for a malformed body, a
// bad id or division by zero, 408 for a body that did not arrive in time, 413 for a body above the
// size limit, 404 for an unknown path and 405 (with Allow) for a known path with the wrong method.
// Routing is a switch on the path rather than a ServeMux pattern because the mux's own 404/405
// answers are plain text.
//
// Limits against bad clients: every body is capped at serverkit.MaxMessageBytes (the limit every
// server shares; Echo's raw payload at the payload limit itself), refused with 413 at once when
// its declared length is larger, and read as it arrives, never into a buffer sized by a length
// the client merely declared. Headers must arrive within the read-header timeout, and a body
// within the read timeout from when its handler starts reading it (408 otherwise), on both
// transports. The body deadline is set per request, only on requests with a body, rather than
// with http.Server.ReadTimeout: that one would also become the idle timeout of keep-alive
// connections (net/http falls back to it) and would arm a timer on every request, GETs included.
// A keep-alive connection may stay idle between requests as long as the idle timeout allows
// (forever by default).
//
// The metrics' code label is the HTTP status ("200", "413"); the method label is the contract
// method, or "unknown" for paths outside the API.
package restserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
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

// Content types.
const (
	ContentTypeJSON        = "application/json"
	ContentTypeOctetStream = "application/octet-stream"
	ContentTypeProtobuf    = "application/x-protobuf"
)

// ArithRequest is the JSON body of /v1/multiply and /v1/divide.
type ArithRequest struct {
	A *int64 `json:"a"`
	B *int64 `json:"b"`
}

// MultiplyResponse is the JSON body /v1/multiply returns.
type MultiplyResponse struct {
	Product int64 `json:"product"`
}

// DivideResponse is the JSON body /v1/divide returns.
type DivideResponse struct {
	Quotient  int64 `json:"quotient"`
	Remainder int64 `json:"remainder"`
}

// ErrorResponse is the body of every error answer.
type ErrorResponse struct {
	Error string `json:"error"`
}

// Defaults of the knobs, shared with every HTTP server (serverkit.HTTPOptions).
const (
	DefaultReadHeaderTimeout    = serverkit.DefaultReadHeaderTimeout
	DefaultReadTimeout          = serverkit.DefaultReadTimeout
	DefaultMaxConcurrentStreams = serverkit.DefaultMaxConcurrentStreams
)

// Options are the server's settings: the payload limit and the transport's (zero values take
// serverkit's defaults).
type Options struct {
	MaxPayloadBytes int
	// Compression is serverkit.CompressionNone (inflate and compress nothing, whatever a client
	// advertises) or serverkit.CompressionGzip (gzip.go).
	Compression string
	serverkit.HTTPOptions
}

// Server is the REST server.
type Server struct {
	*serverkit.HTTPServer
	metrics     *serverkit.Metrics
	maxPayload  int
	maxMessage  int
	readTimeout time.Duration
	gzip        bool // compression gzip: inflate gzip bodies, compress replies (gzip.go)
}

// New builds the server. Metrics may be nil.
func New(opts Options, m *serverkit.Metrics) *Server {
	s := &Server{metrics: m, maxPayload: opts.MaxPayloadBytes, gzip: opts.Compression == serverkit.CompressionGzip}
	if s.maxPayload <= 0 {
		s.maxPayload = contract.DefaultMaxPayloadBytes
	}
	s.maxMessage = serverkit.MaxMessageBytes(s.maxPayload)
	o := opts.HTTPOptions.WithDefaults()
	s.readTimeout = o.ReadTimeout
	s.HTTPServer = serverkit.NewHTTPServer(s, o)
	return s
}

// Spec describes the REST server to serverkit.
var Spec = serverkit.Spec{
	Protocol:      Protocol,
	DefaultListen: DefaultListen,
	Gzip:          true,
	Declare: func(fs *serverkit.Flags) serverkit.Builder {
		httpOpts := serverkit.DeclareHTTP(fs)
		return func(cfg serverkit.Config, m *serverkit.Metrics) (serverkit.Service, error) {
			return serverkit.BindConfig(cfg, m, New(Options{MaxPayloadBytes: cfg.MaxPayloadBytes, Compression: cfg.Compression, HTTPOptions: httpOpts()}, m))
		}
	},
}

// ServeHTTP routes a request and records its metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	method, code := s.route(s.negotiate(w, r))
	if s.metrics != nil {
		s.metrics.ObserveRequest(method, strconv.Itoa(code), time.Since(start))
		s.metrics.ObserveEncodings(r.Header.Get("Content-Encoding"), w.Header().Get("Content-Encoding"))
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
		return contract.MethodGetUser, s.getUser(w, r, p[len(PathUsers):])
	default:
		return "unknown", writeError(w, http.StatusNotFound, fmt.Sprintf("no such path %q; the API is GET %s{id}, POST %s, POST %s, POST %s", p, PathUsers, PathEcho, PathMultiply, PathDivide))
	}
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request, idText string) int {
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		return writeError(w, http.StatusBadRequest, fmt.Sprintf("user id %q: want a decimal int64", idText))
	}
	u := contract.UserByID(id)
	if responseEncoding(r, encJSON) == encProto {
		return writeProto(w, &benchpb.User{Id: u.ID, Name: u.Name, Email: u.Email, Age: u.Age})
	}
	return writeJSON(w, http.StatusOK, u)
}

func (s *Server) echo(w http.ResponseWriter, r *http.Request) int {
	in := requestEncoding(r)
	limit := s.maxPayload
	if in == encProto {
		limit = s.maxMessage
	}
	body, code, err := s.readBody(w, r, limit)
	if err != nil {
		return writeError(w, code, err.Error())
	}
	payload := body
	if in == encProto {
		var req benchpb.EchoRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			return writeError(w, http.StatusBadRequest, "malformed protobuf: want a protobench.v1.EchoRequest: "+err.Error())
		}
		payload = req.GetPayload()
	}
	if len(payload) > s.maxPayload {
		return writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("payload of %d bytes exceeds the limit of %d", len(payload), s.maxPayload))
	}
	if responseEncoding(r, in) == encProto {
		return writeProto(w, &benchpb.EchoResponse{Payload: payload})
	}
	return writeBody(w, http.StatusOK, ContentTypeOctetStream, payload)
}

const arithShape = `{"a": <int64>, "b": <int64>}`

func (s *Server) arith(w http.ResponseWriter, r *http.Request, divide bool) int {
	in := requestEncoding(r)
	var a, b int64
	if in == encProto {
		body, code, err := s.readBody(w, r, s.maxMessage)
		if err != nil {
			return writeError(w, code, err.Error())
		}
		var req benchpb.ArithRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			return writeError(w, http.StatusBadRequest, "malformed protobuf: want a protobench.v1.ArithRequest: "+err.Error())
		}
		a, b = req.GetA(), req.GetB()
	} else {
		if r.ContentLength > int64(s.maxMessage) {
			return writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body of %d bytes exceeds the limit of %d", r.ContentLength, s.maxMessage))
		}
		s.bodyDeadline(w)
		dec := json.NewDecoder(http.MaxBytesReader(rawWriter(w), r.Body, int64(s.maxMessage)))
		var req ArithRequest
		if err := dec.Decode(&req); err != nil {
			if code, msg := s.bodyError(err, r, s.maxMessage); code != 0 {
				return writeError(w, code, msg)
			}
			return writeError(w, http.StatusBadRequest, "malformed JSON: want "+arithShape+": "+err.Error())
		}
		if dec.More() {
			return writeError(w, http.StatusBadRequest, "malformed JSON: trailing data after "+arithShape)
		}
		if req.A == nil || req.B == nil {
			return writeError(w, http.StatusBadRequest, "missing field: want "+arithShape)
		}
		a, b = *req.A, *req.B
	}
	out := responseEncoding(r, in)
	if !divide {
		p := contract.Multiply(a, b)
		if out == encProto {
			return writeProto(w, &benchpb.MultiplyResponse{Product: p})
		}
		return writeJSON(w, http.StatusOK, MultiplyResponse{Product: p})
	}
	q, rem, err := contract.Divide(a, b)
	if err != nil {
		return writeError(w, http.StatusBadRequest, err.Error())
	}
	if out == encProto {
		return writeProto(w, &benchpb.DivideResponse{Quotient: q, Remainder: rem})
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
	return writeBody(w, code, ContentTypeJSON, b)
}

func writeProto(w http.ResponseWriter, m proto.Message) int {
	b, err := proto.Marshal(m)
	if err != nil {
		return writeError(w, http.StatusInternalServerError, "encoding response: "+err.Error())
	}
	return writeBody(w, http.StatusOK, ContentTypeProtobuf, b)
}

func writeBody(w http.ResponseWriter, code int, contentType string, b []byte) int {
	h := w.Header()
	if _, ok := w.(*gzipReply); ok {
		var c *compressed
		b, c = gzipBody(b)
		defer compressors.Put(c)
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
	}
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	w.Write(b)
	return code
}
