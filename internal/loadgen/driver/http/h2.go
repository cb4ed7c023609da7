package httpdriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/driver/h2session"
	"github.com/protobench/protobench/internal/wire/h2wire"
)

// newH2Session is one h2c connection with Concurrency streams, like the gRPC driver's lean one.
func newH2Session(cfg *loadgen.Config, c *conn) *h2session.Session {
	var body []byte
	if len(c.r.body) > 0 {
		body = c.r.body
	}
	return h2session.New(h2session.Protocol{
		Address: cfg.Target.Address,
		Slots:   cfg.Concurrency,
		Fields:  c.r.http2(cfg.Target.Address),
		Body:    body,
		Keep:    []string{contentEncoding},
		Outcome: func(st *h2session.Stream) error {
			if st.RST {
				return loadgen.ProtocolError(loadgen.CodeConnReset, fmt.Errorf("stream reset (HTTP/2 error %d)", st.RSTCode))
			}
			return c.outcome(st.Status, gzipped(st.Fields), st.Data)
		},
		GoingAway: errGoingAway,
		Handshake: "no HTTP/2 (h2c) SETTINGS from the server",
		TLS:       cfg.TLS,
	}, c.wire)
}

var errGoingAway = errors.New("the server is going away (GOAWAY)")

// newH2Client is net/http's client over h2c with prior knowledge, for the open model (and for
// bodies larger than one frame): one TCP connection per loadgen connection, its streams shared
// by the workers. Over TLS its first dial takes first's connection when there is one.
func newH2Client(cfg *loadgen.Config, wire *loadgen.WireBytes, first *handedConn) *http.Client {
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if nc := first.take(); nc != nil {
			return nc, nil
		}
		return loadgen.DialWire(ctx, cfg, addr, wire)
	}
	tr := &http.Transport{
		Protocols:           &protocols,
		DialContext:         dial,
		MaxConnsPerHost:     1,
		MaxIdleConnsPerHost: 1,
		DisableCompression:  true,
		HTTP2:               &http.HTTP2Config{MaxReceiveBufferPerConnection: h2wire.ReceiveWindow, MaxReceiveBufferPerStream: h2wire.ReceiveWindow},
	}
	if cfg.TLS != nil {
		// HTTPS/2: ALPN h2 on a connection DialWire has already shaken hands on.
		protocols = http.Protocols{}
		protocols.SetHTTP2(true)
		tr.DialContext, tr.DialTLSContext = nil, dial
		tr.TLSClientConfig = cfg.TLS
	}
	return &http.Client{Transport: tr}
}

// handedConn is a connection dialled ahead of its user (Dial's handshake over TLS), which the
// first worker's or net/http client's dial takes; Close closes it if none did.
type handedConn struct {
	mu sync.Mutex
	nc net.Conn
}

// take returns the connection once, then nil; nil on a nil handedConn.
func (h *handedConn) take() net.Conn {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	nc := h.nc
	h.nc = nil
	return nc
}

// Close closes the connection if the client never took it.
func (h *handedConn) Close() {
	if nc := h.take(); nc != nil {
		_ = nc.Close()
	}
}

// h2Worker sends one request at a time through the connection's net/http client.
type h2Worker struct {
	conn *conn
	body bytes.Buffer
}

func (w *h2Worker) Do(ctx context.Context) error {
	r := w.conn.r
	var body io.Reader
	if len(r.body) > 0 {
		body = bytes.NewReader(r.body)
	}
	scheme := "http://"
	if w.conn.cfg.TLS != nil {
		scheme = "https://"
	}
	req, err := http.NewRequestWithContext(ctx, r.method, scheme+w.conn.addr+r.path, body)
	if err != nil {
		return err
	}
	for _, h := range r.headers {
		req.Header.Add(h.Name, h.Value)
	}
	req.Header.Set("User-Agent", "protobench")
	resp, err := w.conn.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return loadgen.ConnLost(err)
	}
	w.body.Reset()
	_, err = w.body.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return loadgen.ConnLost(err)
	}
	return w.conn.outcome(resp.StatusCode, resp.Header.Get("Content-Encoding") == "gzip", w.body.Bytes())
}

func (w *h2Worker) Close() error { return nil }
