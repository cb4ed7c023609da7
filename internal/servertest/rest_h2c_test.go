package servertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/server/restserver"
	"github.com/protobench/protobench/internal/servertest"
)

// restVariant is one transport × encoding cell of the REST server: HTTP/1.1 or HTTP/2 cleartext
// with prior knowledge (h2c), JSON or protobuf bodies.
type restVariant struct {
	h2c, protobuf bool
}

func (v restVariant) String() string {
	tr, enc := "http1", "json"
	if v.h2c {
		tr = "h2c"
	}
	if v.protobuf {
		enc = "protobuf"
	}
	return tr + "-" + enc
}

var restVariants = []restVariant{{false, false}, {true, false}, {false, true}, {true, true}}

// restWireClient speaks one restVariant and checks on every answer that the server used it: the
// HTTP version of the response and its Content-Type.
type restWireClient struct {
	restVariant
	base string
	hc   *http.Client
}

func dialRESTVariant(addr string, v restVariant) *restWireClient {
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	if v.h2c {
		// Only unencrypted HTTP/2 in the set: the transport speaks h2c with prior knowledge.
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = &p
	}
	return &restWireClient{restVariant: v, base: "http://" + addr, hc: &http.Client{Transport: tr}}
}

func (c *restWireClient) Close() error { c.hc.CloseIdleConnections(); return nil }

// call sends body (raw bytes, a JSON value or a protobuf message, by the variant) and returns the
// response body after checking the protocol and the content type it came back in.
func (c *restWireClient) call(ctx context.Context, method, path string, body []byte, ctype, wantType string) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if c.protobuf {
		req.Header.Set("Accept", restserver.ContentTypeProtobuf)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if want := map[bool]int{false: 1, true: 2}[c.h2c]; resp.ProtoMajor != want {
		return nil, fmt.Errorf("%s %s answered over %s, want HTTP/%d", method, path, resp.Proto, want)
	}
	if resp.StatusCode != http.StatusOK {
		he := &httpError{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: string(b)}
		var e restserver.ErrorResponse
		if json.Unmarshal(b, &e) == nil {
			he.Message = e.Error
		}
		return nil, he
	}
	if got := resp.Header.Get("Content-Type"); got != wantType {
		return nil, fmt.Errorf("%s %s answered Content-Type %q, want %q", method, path, got, wantType)
	}
	return b, nil
}

// roundTrip calls with a request message and decodes the response, in the variant's encoding.
// jsonIn and jsonOut are the JSON forms; pbIn and pbOut the protobuf ones.
func (c *restWireClient) roundTrip(ctx context.Context, method, path string, jsonIn any, jsonOut any, pbIn, pbOut proto.Message) error {
	if c.protobuf {
		var body []byte
		ctype := ""
		if pbIn != nil {
			body, _ = proto.Marshal(pbIn)
			ctype = restserver.ContentTypeProtobuf
		}
		b, err := c.call(ctx, method, path, body, ctype, restserver.ContentTypeProtobuf)
		if err != nil {
			return err
		}
		return proto.Unmarshal(b, pbOut)
	}
	var body []byte
	ctype := ""
	if jsonIn != nil {
		body, _ = json.Marshal(jsonIn)
		ctype = restserver.ContentTypeJSON
	}
	b, err := c.call(ctx, method, path, body, ctype, restserver.ContentTypeJSON)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, jsonOut)
}

func (c *restWireClient) Echo(ctx context.Context, p []byte) ([]byte, error) {
	if !c.protobuf {
		return c.call(ctx, http.MethodPost, restserver.PathEcho, p, restserver.ContentTypeOctetStream, restserver.ContentTypeOctetStream)
	}
	var out benchpb.EchoResponse
	err := c.roundTrip(ctx, http.MethodPost, restserver.PathEcho, nil, nil, &benchpb.EchoRequest{Payload: p}, &out)
	return out.GetPayload(), err
}

func (c *restWireClient) GetUser(ctx context.Context, id int64) (contract.User, error) {
	var u contract.User
	var pb benchpb.User
	err := c.roundTrip(ctx, http.MethodGet, restserver.PathUsers+strconv.FormatInt(id, 10), nil, &u, nil, &pb)
	if c.protobuf {
		u = contract.User{ID: pb.GetId(), Name: pb.GetName(), Email: pb.GetEmail(), Age: pb.GetAge()}
	}
	return u, err
}

func (c *restWireClient) Multiply(ctx context.Context, a, b int64) (int64, error) {
	var j restserver.MultiplyResponse
	var pb benchpb.MultiplyResponse
	err := c.roundTrip(ctx, http.MethodPost, restserver.PathMultiply, map[string]int64{"a": a, "b": b}, &j, &benchpb.ArithRequest{A: a, B: b}, &pb)
	if c.protobuf {
		return pb.GetProduct(), err
	}
	return j.Product, err
}

func (c *restWireClient) Divide(ctx context.Context, a, b int64) (int64, int64, error) {
	var j restserver.DivideResponse
	var pb benchpb.DivideResponse
	err := c.roundTrip(ctx, http.MethodPost, restserver.PathDivide, map[string]int64{"a": a, "b": b}, &j, &benchpb.ArithRequest{A: a, B: b}, &pb)
	if c.protobuf {
		return pb.GetQuotient(), pb.GetRemainder(), err
	}
	return j.Quotient, j.Remainder, err
}

// TestRESTTransportsAndEncodings runs the whole contract suite against the REST server once per
// transport × encoding, each on a real socket: every endpoint, the 10 MB Echo, the size and
// division errors, garbage on the port, and the metrics.
func TestRESTTransportsAndEncodings(t *testing.T) {
	for _, v := range restVariants {
		sc := serverCase{
			name: "rest-" + v.String(), server: servertest.REST, protocol: "rest", okCode: "200",
			options:        []servertest.Option{servertest.WithMaxPayloadBytes(maxPayload)},
			dial:           func(_ testing.TB, ep servertest.Endpoints) client { return dialRESTVariant(ep.Main, v) },
			isOversize:     httpStatus(http.StatusRequestEntityTooLarge),
			isDivideByZero: httpStatus(http.StatusBadRequest),
			unknownMethod: func(_ testing.TB, ep servertest.Endpoints) error {
				c := dialRESTVariant(ep.Main, v)
				defer c.Close()
				_, err := c.call(context.Background(), http.MethodGet, "/v1/nope", nil, "", "")
				return httpStatus(http.StatusNotFound)(err)
			},
			truncated: map[string][]byte{
				"half an h2 preface":      []byte("PRI * HTTP/2.0\r\n"),
				"preface then half frame": http2Truncated,
				"body cut short":          []byte("POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc"),
			},
		}
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			runContract(t, sc, servertest.Start(t, sc.server, sc.options...))
		})
	}
}

// TestRESTNegotiation checks that the response follows Accept, not the request's body, and that
// without Accept (or with */*) it follows the request's Content-Type, on both transports.
func TestRESTNegotiation(t *testing.T) {
	ep := servertest.Start(t, servertest.REST)
	ctx := context.Background()
	echoPB, _ := proto.Marshal(&benchpb.EchoRequest{Payload: []byte("hello")})
	arithPB, _ := proto.Marshal(&benchpb.ArithRequest{A: 6, B: 7})
	tests := []struct {
		name, path, ctype, accept string
		body                      []byte
		wantType                  string
		check                     func(b []byte) error
	}{
		{"protobuf in, raw out", restserver.PathEcho, restserver.ContentTypeProtobuf, restserver.ContentTypeOctetStream, echoPB,
			restserver.ContentTypeOctetStream, wantBytes([]byte("hello"))},
		{"raw in, protobuf out", restserver.PathEcho, restserver.ContentTypeOctetStream, restserver.ContentTypeProtobuf, []byte("hello"),
			restserver.ContentTypeProtobuf, wantEchoPB("hello")},
		{"protobuf in, no Accept", restserver.PathEcho, restserver.ContentTypeProtobuf, "", echoPB,
			restserver.ContentTypeProtobuf, wantEchoPB("hello")},
		{"protobuf in, */*", restserver.PathMultiply, restserver.ContentTypeProtobuf + "; charset=binary", "*/*", arithPB,
			restserver.ContentTypeProtobuf, wantProduct(42)},
		{"protobuf in, JSON out", restserver.PathMultiply, restserver.ContentTypeProtobuf, "application/json", arithPB,
			restserver.ContentTypeJSON, wantJSONProduct(42)},
		{"JSON in, protobuf out", restserver.PathMultiply, restserver.ContentTypeJSON, "text/plain, application/x-protobuf;q=0.9", []byte(`{"a":6,"b":7}`),
			restserver.ContentTypeProtobuf, wantProduct(42)},
	}
	for _, h2c := range []bool{false, true} {
		c := dialRESTVariant(ep.Main, restVariant{h2c: h2c})
		defer c.Close()
		for _, tt := range tests {
			t.Run(fmt.Sprintf("h2c=%v/%s", h2c, tt.name), func(t *testing.T) {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.base+tt.path, bytes.NewReader(tt.body))
				req.Header.Set("Content-Type", tt.ctype)
				if tt.accept != "" {
					req.Header.Set("Accept", tt.accept)
				}
				resp, err := c.hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tt.wantType {
					t.Fatalf("%s %s: body %q; want 200 %s", resp.Status, resp.Header.Get("Content-Type"), b, tt.wantType)
				}
				if err := tt.check(b); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
	t.Run("malformed protobuf is a 400 with a JSON error", func(t *testing.T) {
		c := dialRESTVariant(ep.Main, restVariant{protobuf: true})
		defer c.Close()
		_, err := c.call(ctx, http.MethodPost, restserver.PathDivide, []byte{0xff, 0xff, 0xff}, restserver.ContentTypeProtobuf, restserver.ContentTypeProtobuf)
		if e := httpStatus(http.StatusBadRequest)(err); e != nil {
			t.Fatal(e)
		}
	})
}

func wantBytes(want []byte) func([]byte) error {
	return func(b []byte) error {
		if !bytes.Equal(b, want) {
			return fmt.Errorf("body %q, want %q", b, want)
		}
		return nil
	}
}

func wantEchoPB(payload string) func([]byte) error {
	return func(b []byte) error {
		var m benchpb.EchoResponse
		if err := proto.Unmarshal(b, &m); err != nil || string(m.GetPayload()) != payload {
			return fmt.Errorf("EchoResponse %v, %v; want payload %q", &m, err, payload)
		}
		return nil
	}
}

func wantProduct(p int64) func([]byte) error {
	return func(b []byte) error {
		var m benchpb.MultiplyResponse
		if err := proto.Unmarshal(b, &m); err != nil || m.GetProduct() != p {
			return fmt.Errorf("MultiplyResponse %v, %v; want product %d", &m, err, p)
		}
		return nil
	}
}

func wantJSONProduct(p int64) func([]byte) error {
	return func(b []byte) error {
		var m restserver.MultiplyResponse
		if err := json.Unmarshal(b, &m); err != nil || m.Product != p {
			return fmt.Errorf("body %q, %v; want product %d", b, err, p)
		}
		return nil
	}
}
