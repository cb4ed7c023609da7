// Package h2wire is the client side of HTTP/2 (RFC 9113) that the load generator's lean gRPC and
// h2c drivers share: frames parsed in place, HPACK through golang.org/x/net/http2/hpack, flow
// control, and request header blocks that cost the server as little as any client's.
//
// Header blocks: a request's fields are the same on every call, so after the first call on a
// connection they all sit in HPACK's dynamic table and every later block is one byte per field
// (what h2load and browsers send). Blocks of literals would make the server decode every field,
// Huffman and all, on every call. See HeaderBlocks.
package h2wire

import (
	"encoding/binary"
	"errors"

	"golang.org/x/net/http2/hpack"
)

// Frame types, flags and settings.
const (
	FrameData         = 0x0
	FrameHeaders      = 0x1
	FrameRSTStream    = 0x3
	FrameSettings     = 0x4
	FramePushPromise  = 0x5
	FramePing         = 0x6
	FrameGoAway       = 0x7
	FrameWindowUpdate = 0x8
	FrameContinuation = 0x9

	FlagEndStream  = 0x1
	FlagAck        = 0x1
	FlagEndHeaders = 0x4
	FlagPadded     = 0x8
	FlagPriority   = 0x20

	SettingHeaderTableSize      = 0x1
	SettingEnablePush           = 0x2
	SettingMaxConcurrentStreams = 0x3
	SettingInitialWindowSize    = 0x4
	SettingMaxFrameSize         = 0x5

	FrameHeaderLen   = 9
	DefaultWindow    = 65535
	DefaultFrameSize = 16384
	MaxStreamID      = 1<<31 - 1
	ClientPreface    = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	// ReceiveWindow is what the client lets the server send, per stream and in all.
	ReceiveWindow = 1 << 30
	// RefusedStream and friends are RST_STREAM error codes.
	RefusedStream    = 0x7
	Cancel           = 0x8
	EnhanceYourCalm  = 0xb
	defaultTableSize = 4096
)

// ErrProtocol is wrapped by every error about what the server sent.
var ErrProtocol = errors.New("HTTP/2 protocol error")

// AppendFrameHeader appends a frame header.
func AppendFrameHeader(b []byte, length int, typ, flags byte, id uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), typ, flags,
		byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

// AppendSettings appends a SETTINGS frame.
func AppendSettings(b []byte, params [][2]uint32) []byte {
	b = AppendFrameHeader(b, 6*len(params), FrameSettings, 0, 0)
	for _, p := range params {
		b = binary.BigEndian.AppendUint16(b, uint16(p[0]))
		b = binary.BigEndian.AppendUint32(b, p[1])
	}
	return b
}

// AppendWindowUpdate appends a WINDOW_UPDATE frame.
func AppendWindowUpdate(b []byte, id, inc uint32) []byte {
	b = AppendFrameHeader(b, 4, FrameWindowUpdate, 0, id)
	return binary.BigEndian.AppendUint32(b, inc)
}

// Field is a request header field.
type Field struct{ Name, Value string }

// HeaderBlocks encodes one request's header block for a connection: First for the connection's
// first request (literals that enter the dynamic table), Steady for every later one (indexed
// references to those entries). When the fields do not all fit in the table the server allows,
// both are literals that never enter it, valid on any connection in any order.
type HeaderBlocks struct {
	First, Steady []byte
}

// EncodeHeaders builds the blocks for fields under the server's SETTINGS_HEADER_TABLE_SIZE.
func EncodeHeaders(fields []Field, tableSize uint32) HeaderBlocks {
	size := uint32(0)
	for _, f := range fields {
		size += uint32(len(f.Name)+len(f.Value)) + 32 // RFC 7541 §4.1
	}
	var out byteWriter
	enc := hpack.NewEncoder(&out)
	sensitive := size > min(tableSize, defaultTableSize)
	if !sensitive && tableSize < defaultTableSize {
		enc.SetMaxDynamicTableSizeLimit(tableSize)
	}
	encode := func() []byte {
		out = nil
		for _, f := range fields {
			_ = enc.WriteField(hpack.HeaderField{Name: f.Name, Value: f.Value, Sensitive: sensitive})
		}
		return out
	}
	first := encode()
	return HeaderBlocks{First: first, Steady: encode()}
}

type byteWriter []byte

func (w *byteWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }

// Stream is one request in flight; T is what the driver keeps with it.
type Stream[T any] struct {
	ID      uint32
	Req     T
	Status  int // :status, 0 until the headers say
	Data    []byte
	RST     bool // reset by the server (or refused by its GOAWAY)
	RSTCode uint32
	// Fields holds the response's other header and trailer fields that the Client was asked to
	// keep (Client.Keep), in order of arrival.
	Fields []Field
}

// Client is the state of one client connection: streams, flow control, HPACK decoding. It writes
// the frames it owes the server (SETTINGS and PING acknowledgements, WINDOW_UPDATE) to *Out.
type Client[T any] struct {
	Out *[]byte
	// Keep lists the header fields (besides :status) that streams record in Stream.Fields.
	Keep []string

	streams    map[uint32]*Stream[T]
	free       []*Stream[T]
	Finished   []*Stream[T] // streams that ended while frames were handled, for the driver
	dec        *hpack.Decoder
	nextID     uint32
	maxStreams int
	sendWindow int64 // connection-level window for our DATA
	streamWin  int64 // the server's initial stream window
	recvUnack  int64 // DATA received since the last WINDOW_UPDATE we sent
	tableSize  uint32
	GoingAway  bool // GOAWAY received or stream ids exhausted: no new streams
	Settled    bool // the server's SETTINGS arrived
	firstSent  bool // the connection's first header block has gone out

	hdr       []byte
	inHeaders bool
	hdrStream uint32
	hdrEnd    bool
	cur       *Stream[T]
}

// Reset starts a new connection: the client preface and settings go to *Out.
func (c *Client[T]) Reset() {
	for id := range c.streams {
		delete(c.streams, id)
	}
	if c.streams == nil {
		c.streams = map[uint32]*Stream[T]{}
	}
	c.Finished = c.Finished[:0]
	c.dec = hpack.NewDecoder(defaultTableSize, c.onField)
	c.dec.SetMaxStringLength(DefaultFrameSize * 4)
	c.nextID = 1
	c.maxStreams = MaxStreamID
	c.sendWindow, c.streamWin = DefaultWindow, DefaultWindow
	c.recvUnack = 0
	c.tableSize = defaultTableSize
	c.GoingAway, c.Settled, c.firstSent = false, false, false
	c.hdr, c.inHeaders, c.cur = c.hdr[:0], false, nil
	out := append(*c.Out, ClientPreface...)
	out = AppendSettings(out, [][2]uint32{{SettingEnablePush, 0}, {SettingInitialWindowSize, ReceiveWindow}})
	*c.Out = AppendWindowUpdate(out, 0, ReceiveWindow-DefaultWindow)
}

// HeaderTableSize is the server's SETTINGS_HEADER_TABLE_SIZE (for EncodeHeaders).
func (c *Client[T]) HeaderTableSize() uint32 { return c.tableSize }

// Inflight is how many streams are open.
func (c *Client[T]) Inflight() int { return len(c.streams) }

// Each calls f for every open stream and forgets them all.
func (c *Client[T]) Each(f func(*Stream[T])) {
	for id, s := range c.streams {
		f(s)
		delete(c.streams, id)
	}
	for _, s := range c.Finished {
		f(s)
	}
	c.Finished = c.Finished[:0]
}

// Room is how many streams may be opened now, each sending dataLen bytes of DATA, under the
// server's stream limit, flow control and limit (the driver's own slots).
func (c *Client[T]) Room(limit, dataLen int) int {
	if c.GoingAway || !c.Settled {
		return 0
	}
	n := min(limit, c.maxStreams) - len(c.streams)
	if dataLen > 0 {
		if c.streamWin < int64(dataLen) {
			return 0
		}
		n = min(n, int(c.sendWindow/int64(dataLen)))
	}
	return max(n, 0)
}

// Open starts a stream: HEADERS (block is the HeaderBlocks for this connection) and, unless data
// is nil, one DATA frame with END_STREAM, appended to *Out. data must fit one frame and the
// windows (see Room).
func (c *Client[T]) Open(blocks *HeaderBlocks, data []byte, req T) *Stream[T] {
	id := c.nextID
	c.nextID += 2
	if c.nextID > MaxStreamID-2 {
		c.GoingAway = true // stream ids run out: finish these streams, then reconnect
	}
	var s *Stream[T]
	if n := len(c.free); n > 0 {
		s, c.free = c.free[n-1], c.free[:n-1]
	} else {
		s = &Stream[T]{}
	}
	*s = Stream[T]{ID: id, Req: req, Data: s.Data[:0], Fields: s.Fields[:0]}
	c.streams[id] = s
	block := blocks.Steady
	if !c.firstSent {
		block, c.firstSent = blocks.First, true
	}
	out := *c.Out
	if data == nil {
		out = AppendFrameHeader(out, len(block), FrameHeaders, FlagEndHeaders|FlagEndStream, id)
		*c.Out = append(out, block...)
		return s
	}
	out = AppendFrameHeader(out, len(block), FrameHeaders, FlagEndHeaders, id)
	out = append(out, block...)
	out = AppendFrameHeader(out, len(data), FrameData, FlagEndStream, id)
	*c.Out = append(out, data...)
	c.sendWindow -= int64(len(data))
	return s
}

// Recycle returns a finished stream for reuse once the driver has recorded it.
func (c *Client[T]) Recycle(s *Stream[T]) { c.free = append(c.free, s) }
