package grpcdriver

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/netloop"
)

// The lean client runs unary calls in the closed model. grpc-go's client costs about as much CPU
// per call as grpc-go's server, so on equal cores it could not load a server fully. The lean
// client speaks the same protocol — HTTP/2 frames carrying length-prefixed protobuf messages,
// status in the trailers — from prebuilt bytes: the request's header block is encoded once
// without HPACK's dynamic table, so it is the same for every call; frames are parsed in place;
// every connection of a group is served by one event loop (loadgen.Multiplexer), which writes
// all the calls that are due in one system call per connection. Replies are checked against the
// contract as grpc-go's path checks them. --grpc-client grpc-go selects grpc-go's client instead.

// HTTP/2 frame types, flags and settings (RFC 9113).
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePushPromise  = 0x5
	framePing         = 0x6
	frameGoAway       = 0x7
	frameWindowUpdate = 0x8
	frameContinuation = 0x9

	flagEndStream  = 0x1
	flagAck        = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20

	settingEnablePush           = 0x2
	settingMaxConcurrentStreams = 0x3
	settingInitialWindowSize    = 0x4
	settingMaxFrameSize         = 0x5

	frameHeaderLen    = 9
	defaultWindow     = 65535
	defaultFrameSize  = 16384
	maxStreamID       = 1<<31 - 1
	clientPreface     = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	receiveWindow     = 1 << 30 // what the client lets the server send, per stream and in all
	maxLeanMessage    = defaultFrameSize - 5
	readBufferInitial = 64 << 10
)

// Option values of --grpc-client.
const (
	ClientLean   = "lean"
	ClientGRPCGo = "grpc-go"
)

// Multiplexes implements loadgen.Multiplexer: unary calls in the closed model whose request fits
// one DATA frame run on the lean client, unless --grpc-client grpc-go.
func (Driver) Multiplexes(cfg *loadgen.Config) bool {
	if cfg.Open() || !netloop.Supported || cfg.Options["grpc_client"] == ClientGRPCGo || cfg.Method == contract.MethodEchoStream {
		return false
	}
	msg, _, err := leanRequest(cfg)
	return err == nil && len(msg) <= maxLeanMessage+5
}

// leanRequest is the call's message (with the 5-byte gRPC prefix) and the check of a reply
// message, the same requests and checks as the grpc-go path.
func leanRequest(cfg *loadgen.Config) ([]byte, func([]byte) error, error) {
	w, err := newUnary(nil, cfg)
	if err != nil {
		return nil, nil, err
	}
	body, err := proto.Marshal(w.req)
	if err != nil {
		return nil, nil, err
	}
	msg := make([]byte, 5+len(body))
	binary.BigEndian.PutUint32(msg[1:5], uint32(len(body)))
	copy(msg[5:], body)
	check := func(b []byte) error {
		if err := proto.Unmarshal(b, w.resp); err != nil {
			return badResponse("%s reply does not parse: %v", cfg.Method, err)
		}
		return w.check()
	}
	return msg, check, nil
}

// headerBlock encodes the request headers once. Every field is marked sensitive, so HPACK never
// adds it to the dynamic table and the same block is valid for every call on every connection.
func headerBlock(cfg *loadgen.Config) []byte {
	var out byteWriter
	enc := hpack.NewEncoder(&out)
	for _, f := range [][2]string{
		{":method", "POST"},
		{":scheme", "http"},
		{":path", service + cfg.Method},
		{":authority", cfg.Target.Address},
		{"content-type", "application/grpc"},
		{"te", "trailers"},
		// As grpc-go does with its gzip codec registered: a server that compresses replies
		// (the Python server's gzip knob) may then do so, and the reply is inflated below.
		{"grpc-accept-encoding", "identity,gzip"},
		{"user-agent", "protobench"},
	} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1], Sensitive: true})
	}
	return out
}

type byteWriter []byte

func (w *byteWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }

// leanConn is one HTTP/2 connection of the lean client.
type leanConn struct {
	cfg   *loadgen.Config
	wire  *loadgen.WireBytes
	slots int
	block []byte // request header block
	msg   []byte // request message with its gRPC prefix
	check func([]byte) error

	fd         int
	out        []byte // frames waiting to be written
	watchOut   bool   // the poller watches for writability
	in         []byte
	inN        int
	dec        *hpack.Decoder
	nextID     uint32
	streams    map[uint32]*leanStream
	free       []*leanStream
	maxStreams int   // the server's SETTINGS_MAX_CONCURRENT_STREAMS
	sendWindow int64 // connection-level window for our DATA
	streamWin  int64 // the server's initial stream window
	recvUnack  int64 // DATA received since the last WINDOW_UPDATE we sent
	goingAway  bool  // GOAWAY received or stream ids exhausted: no new streams, reconnect when idle
	settings   bool  // the server's SETTINGS arrived

	hdr       []byte // header block being assembled (HEADERS + CONTINUATION)
	inHeaders bool   // a header block awaits its CONTINUATION frames
	hdrStream uint32
	hdrEnd    bool // the HEADERS frame carried END_STREAM
	cur       *leanStream

	finished []*leanStream // calls that ended while frames were handled, for the loop to record
}

// leanStream is one call in flight.
type leanStream struct {
	id         uint32
	t          loadgen.Ticket
	start      time.Time
	httpStatus int
	grpcStatus int // -1 until the trailers say
	grpcMsg    string
	data       []byte
	rstCode    uint32
	rst        bool
}

func (c *leanConn) NewWorker(context.Context) (loadgen.Worker, error) {
	return nil, errors.New("grpc lean connections are served by event loops")
}

func (c *leanConn) Close() error {
	if c.fd >= 0 {
		_ = netloop.Close(c.fd)
		c.fd = -1
	}
	return nil
}

// dialLean opens a connection and completes the HTTP/2 handshake: our preface and settings, the
// server's settings. A server that accepts TCP but does not speak HTTP/2 fails here, within the
// connect timeout.
func dialLean(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (*leanConn, error) {
	msg, check, err := leanRequest(cfg)
	if err != nil {
		return nil, err
	}
	c := &leanConn{cfg: cfg, wire: wire, slots: cfg.Concurrency, block: headerBlock(cfg), msg: msg, check: check, fd: -1}
	return c, c.connect(ctx)
}

func (c *leanConn) connect(ctx context.Context) error {
	addr := c.cfg.Target.Address
	fd, err := netloop.Dial(ctx, addr)
	if err != nil {
		return err
	}
	c.fd = fd
	c.out = c.out[:0]
	c.inN = 0
	if c.in == nil {
		c.in = make([]byte, readBufferInitial)
	}
	c.dec = hpack.NewDecoder(4096, c.onField)
	c.nextID = 1
	c.streams = map[uint32]*leanStream{}
	c.maxStreams = maxStreamID
	c.sendWindow, c.streamWin = defaultWindow, defaultWindow
	c.recvUnack = 0
	c.goingAway, c.settings = false, false
	c.hdr = c.hdr[:0]
	c.inHeaders = false
	c.finished = c.finished[:0]
	c.watchOut = false

	c.out = append(c.out, clientPreface...)
	c.out = appendSettings(c.out, [][2]uint32{{settingEnablePush, 0}, {settingInitialWindowSize, receiveWindow}})
	c.out = appendWindowUpdate(c.out, 0, receiveWindow-defaultWindow)
	for len(c.out) > 0 {
		if err := c.flushOnce(); err != nil {
			return c.handshakeError(err)
		}
		if len(c.out) > 0 {
			if err := netloop.WaitFD(ctx, c.fd, netloop.PollOut); err != nil {
				return c.handshakeError(err)
			}
		}
	}
	for !c.settings {
		if err := netloop.WaitFD(ctx, c.fd, netloop.PollIn); err != nil {
			return c.handshakeError(fmt.Errorf("the server sent no HTTP/2 SETTINGS: %w", err))
		}
		if err := c.readOnce(); err != nil && !netloop.IsAgain(err) {
			return c.handshakeError(err)
		}
		if err := c.frames(); err != nil {
			return c.handshakeError(err)
		}
	}
	return nil
}

func (c *leanConn) handshakeError(err error) error {
	_ = c.Close()
	return &loadgen.DialError{Address: c.cfg.Target.Address, Err: fmt.Errorf("gRPC connection not ready: %w", err)}
}

// flushOnce writes as much of c.out as the socket takes.
func (c *leanConn) flushOnce() error {
	for len(c.out) > 0 {
		n, err := netloop.Write(c.fd, c.out)
		if n > 0 {
			c.wire.Sent.Add(int64(n))
			c.out = c.out[:copy(c.out, c.out[n:])]
		}
		if err != nil {
			if netloop.IsAgain(err) {
				return nil
			}
			return err
		}
	}
	return nil
}

var errClosedByServer = errors.New("connection closed by the server")

// readOnce reads what has arrived.
func (c *leanConn) readOnce() error {
	if c.inN == len(c.in) {
		c.in = append(c.in, make([]byte, len(c.in))...)
	}
	n, err := netloop.Read(c.fd, c.in[c.inN:])
	if err != nil {
		return err
	}
	if n == 0 {
		return errClosedByServer
	}
	c.wire.Received.Add(int64(n))
	c.inN += n
	return nil
}

// streamLimit is how many calls may be in flight on the connection now.
func (c *leanConn) streamLimit() int { return min(c.slots, c.maxStreams) }

// open starts a call: HEADERS and DATA with END_STREAM, appended to the output.
func (c *leanConn) open(t loadgen.Ticket, now time.Time) {
	id := c.nextID
	c.nextID += 2
	if c.nextID > maxStreamID-2 {
		c.goingAway = true // stream ids run out: finish these calls, then reconnect
	}
	var s *leanStream
	if n := len(c.free); n > 0 {
		s, c.free = c.free[n-1], c.free[:n-1]
	} else {
		s = &leanStream{}
	}
	*s = leanStream{id: id, t: t, start: now, grpcStatus: -1, data: s.data[:0]}
	c.streams[id] = s
	c.out = appendFrameHeader(c.out, len(c.block), frameHeaders, flagEndHeaders, id)
	c.out = append(c.out, c.block...)
	c.out = appendFrameHeader(c.out, len(c.msg), frameData, flagEndStream, id)
	c.out = append(c.out, c.msg...)
	c.sendWindow -= int64(len(c.msg))
}

// canOpen reports whether flow control lets another call's message go now.
func (c *leanConn) canOpen() bool {
	return !c.goingAway && len(c.streams) < c.streamLimit() &&
		c.sendWindow >= int64(len(c.msg)) && c.streamWin >= int64(len(c.msg))
}

// frames handles every complete frame in the input buffer; ended calls go to c.finished.
func (c *leanConn) frames() error {
	pos := 0
	for c.inN-pos >= frameHeaderLen {
		h := c.in[pos : pos+frameHeaderLen]
		length := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		if length > defaultFrameSize {
			return fmt.Errorf("HTTP/2 frame of %d bytes exceeds the %d we allow", length, defaultFrameSize)
		}
		if c.inN-pos < frameHeaderLen+length {
			break
		}
		typ, flags := h[3], h[4]
		id := binary.BigEndian.Uint32(h[5:9]) & maxStreamID
		payload := c.in[pos+frameHeaderLen : pos+frameHeaderLen+length]
		pos += frameHeaderLen + length
		if err := c.frame(typ, flags, id, payload); err != nil {
			return err
		}
	}
	c.inN = copy(c.in, c.in[pos:c.inN])
	return nil
}

var errProtocol = errors.New("HTTP/2 protocol error")

func (c *leanConn) frame(typ, flags byte, id uint32, p []byte) error {
	if c.inHeaders && typ != frameContinuation {
		return fmt.Errorf("%w: frame type %d inside a header block", errProtocol, typ)
	}
	switch typ {
	case frameData:
		c.recvUnack += int64(len(p))
		if flags&flagPadded != 0 {
			if len(p) == 0 || int(p[0]) >= len(p) {
				return fmt.Errorf("%w: bad DATA padding", errProtocol)
			}
			p = p[1 : len(p)-int(p[0])]
		}
		if s := c.streams[id]; s != nil {
			s.data = append(s.data, p...)
			if flags&flagEndStream != 0 {
				c.finish(s) // no trailers: finish reports it
			}
		}
		if c.recvUnack >= receiveWindow/2 {
			c.out = appendWindowUpdate(c.out, 0, uint32(c.recvUnack))
			c.recvUnack = 0
		}
	case frameHeaders:
		if flags&flagPadded != 0 {
			if len(p) == 0 || int(p[0]) >= len(p) {
				return fmt.Errorf("%w: bad HEADERS padding", errProtocol)
			}
			p = p[1 : len(p)-int(p[0])]
		}
		if flags&flagPriority != 0 {
			if len(p) < 5 {
				return fmt.Errorf("%w: short HEADERS priority", errProtocol)
			}
			p = p[5:]
		}
		c.hdr = append(c.hdr[:0], p...)
		c.hdrStream, c.hdrEnd = id, flags&flagEndStream != 0
		c.inHeaders = true
		if flags&flagEndHeaders != 0 {
			return c.headersDone()
		}
	case frameContinuation:
		if !c.inHeaders || id != c.hdrStream {
			return fmt.Errorf("%w: CONTINUATION on another stream", errProtocol)
		}
		c.hdr = append(c.hdr, p...)
		if flags&flagEndHeaders != 0 {
			return c.headersDone()
		}
	case frameRSTStream:
		if len(p) != 4 {
			return fmt.Errorf("%w: RST_STREAM of %d bytes", errProtocol, len(p))
		}
		if s := c.streams[id]; s != nil {
			s.rst, s.rstCode = true, binary.BigEndian.Uint32(p)
			c.finish(s)
		}
	case frameSettings:
		if flags&flagAck != 0 {
			return nil
		}
		if len(p)%6 != 0 {
			return fmt.Errorf("%w: SETTINGS of %d bytes", errProtocol, len(p))
		}
		for i := 0; i < len(p); i += 6 {
			v := binary.BigEndian.Uint32(p[i+2 : i+6])
			switch binary.BigEndian.Uint16(p[i : i+2]) {
			case settingMaxConcurrentStreams:
				c.maxStreams = int(min(v, maxStreamID))
			case settingInitialWindowSize:
				c.streamWin = int64(v)
			}
		}
		c.settings = true
		c.out = appendFrameHeader(c.out, 0, frameSettings, flagAck, 0)
	case framePing:
		if flags&flagAck == 0 && len(p) == 8 {
			c.out = appendFrameHeader(c.out, 8, framePing, flagAck, 0)
			c.out = append(c.out, p...)
		}
	case frameGoAway:
		if len(p) < 8 {
			return fmt.Errorf("%w: short GOAWAY", errProtocol)
		}
		last := binary.BigEndian.Uint32(p[0:4]) & maxStreamID
		c.goingAway = true
		// Calls the server never took will not be answered.
		for sid, s := range c.streams {
			if sid > last {
				s.rst, s.rstCode = true, 7 // REFUSED_STREAM: the call was not processed
				c.finish(s)
			}
		}
	case frameWindowUpdate:
		if len(p) != 4 {
			return fmt.Errorf("%w: WINDOW_UPDATE of %d bytes", errProtocol, len(p))
		}
		if id == 0 {
			c.sendWindow += int64(binary.BigEndian.Uint32(p) & maxStreamID)
		}
	case framePushPromise:
		return fmt.Errorf("%w: PUSH_PROMISE although push is disabled", errProtocol)
	}
	return nil
}

// headersDone decodes a complete header block. Every block is decoded, even for a stream that is
// gone, because HPACK's dynamic table must follow the server's.
func (c *leanConn) headersDone() error {
	c.cur = c.streams[c.hdrStream]
	_, err := c.dec.Write(c.hdr)
	if err == nil {
		err = c.dec.Close()
	}
	c.hdr = c.hdr[:0]
	c.inHeaders = false
	if err != nil {
		return fmt.Errorf("%w: HPACK: %v", errProtocol, err)
	}
	if s := c.cur; s != nil && c.hdrEnd {
		c.finish(s)
	}
	c.cur = nil
	return nil
}

func (c *leanConn) onField(f hpack.HeaderField) {
	s := c.cur
	if s == nil {
		return
	}
	switch f.Name {
	case ":status":
		s.httpStatus, _ = strconv.Atoi(f.Value)
	case "grpc-status":
		if v, err := strconv.Atoi(f.Value); err == nil {
			s.grpcStatus = v
		}
	case "grpc-message":
		s.grpcMsg = f.Value
	}
}

// finish ends a call; the loop records it after the frames at hand are handled.
func (c *leanConn) finish(s *leanStream) {
	delete(c.streams, s.id)
	c.finished = append(c.finished, s)
}

// outcome judges a finished call the way a gRPC client would.
func (c *leanConn) outcome(s *leanStream) error {
	switch {
	case s.rst:
		code := codes.Internal
		switch s.rstCode {
		case 7: // REFUSED_STREAM
			code = codes.Unavailable
		case 8: // CANCEL
			code = codes.Canceled
		case 0xb: // ENHANCE_YOUR_CALM
			code = codes.ResourceExhausted
		}
		return loadgen.ProtocolError("grpc:"+code.String(), fmt.Errorf("stream reset (HTTP/2 error %d)", s.rstCode))
	case s.grpcStatus < 0:
		if s.httpStatus != 0 && s.httpStatus != 200 {
			return loadgen.ProtocolError("grpc:"+httpStatusCode(s.httpStatus).String(), fmt.Errorf("HTTP status %d", s.httpStatus))
		}
		return loadgen.ProtocolError("grpc:"+codes.Internal.String(), errors.New("the call ended without grpc-status"))
	case s.grpcStatus != 0:
		return loadgen.ProtocolError("grpc:"+codes.Code(s.grpcStatus).String(), errors.New(s.grpcMsg))
	}
	d := s.data
	if len(d) < 5 || d[0] > 1 || int(binary.BigEndian.Uint32(d[1:5])) != len(d)-5 {
		return badResponse("reply is not one gRPC message (%d bytes)", len(d))
	}
	if d[0] == 1 {
		// Compressed: gzip is the only encoding this client accepts.
		msg, err := gunzip(d[5:])
		if err != nil {
			return badResponse("compressed reply does not inflate as gzip: %v", err)
		}
		return c.check(msg)
	}
	return c.check(d[5:])
}

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(zr); err != nil {
		return nil, err
	}
	return out.Bytes(), zr.Close()
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

func appendFrameHeader(b []byte, length int, typ, flags byte, id uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), typ, flags,
		byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

func appendSettings(b []byte, params [][2]uint32) []byte {
	b = appendFrameHeader(b, 6*len(params), frameSettings, 0, 0)
	for _, p := range params {
		b = binary.BigEndian.AppendUint16(b, uint16(p[0]))
		b = binary.BigEndian.AppendUint32(b, p[1])
	}
	return b
}

func appendWindowUpdate(b []byte, id, inc uint32) []byte {
	b = appendFrameHeader(b, 4, frameWindowUpdate, 0, id)
	return binary.BigEndian.AppendUint32(b, inc)
}
