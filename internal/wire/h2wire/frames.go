package h2wire

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"golang.org/x/net/http2/hpack"
)

// Frames handles every complete frame in in and returns how many bytes it used; streams that
// end go to Finished.
func (c *Client[T]) Frames(in []byte) (int, error) {
	pos := 0
	for len(in)-pos >= FrameHeaderLen {
		h := in[pos : pos+FrameHeaderLen]
		length := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		if length > DefaultFrameSize {
			return pos, fmt.Errorf("%w: frame of %d bytes exceeds the %d we allow", ErrProtocol, length, DefaultFrameSize)
		}
		if len(in)-pos < FrameHeaderLen+length {
			break
		}
		typ, flags := h[3], h[4]
		id := binary.BigEndian.Uint32(h[5:9]) & MaxStreamID
		payload := in[pos+FrameHeaderLen : pos+FrameHeaderLen+length]
		pos += FrameHeaderLen + length
		if err := c.frame(typ, flags, id, payload); err != nil {
			return pos, err
		}
	}
	return pos, nil
}

// frame handles one frame of the server's.
func (c *Client[T]) frame(typ, flags byte, id uint32, p []byte) error {
	if c.inHeaders && typ != FrameContinuation {
		return fmt.Errorf("%w: frame type %d inside a header block", ErrProtocol, typ)
	}
	switch typ {
	case FrameData:
		return c.data(flags, id, p)
	case FrameHeaders:
		return c.headers(flags, id, p)
	case FrameContinuation:
		return c.continuation(flags, id, p)
	case FrameRSTStream:
		return c.rstStream(id, p)
	case FrameSettings:
		return c.settings(flags, p)
	case FramePing:
		if flags&FlagAck == 0 && len(p) == 8 {
			*c.Out = append(AppendFrameHeader(*c.Out, 8, FramePing, FlagAck, 0), p...)
		}
	case FrameGoAway:
		return c.goAway(p)
	case FrameWindowUpdate:
		return c.windowUpdate(id, p)
	case FramePushPromise:
		return fmt.Errorf("%w: PUSH_PROMISE although push is disabled", ErrProtocol)
	}
	return nil
}

func (c *Client[T]) data(flags byte, id uint32, p []byte) error {
	c.recvUnack += int64(len(p))
	if flags&FlagPadded != 0 {
		if len(p) == 0 || int(p[0]) >= len(p) {
			return fmt.Errorf("%w: bad DATA padding", ErrProtocol)
		}
		p = p[1 : len(p)-int(p[0])]
	}
	if s := c.streams[id]; s != nil {
		s.Data = append(s.Data, p...)
		if flags&FlagEndStream != 0 {
			c.finish(s)
		}
	}
	// One connection-level update per half window: the stream windows are as large as the
	// connection's, and no stream gets near them.
	if c.recvUnack >= ReceiveWindow/2 {
		*c.Out = AppendWindowUpdate(*c.Out, 0, uint32(c.recvUnack))
		c.recvUnack = 0
	}
	return nil
}

// headers starts a header block, which CONTINUATION frames may carry on.
func (c *Client[T]) headers(flags byte, id uint32, p []byte) error {
	if flags&FlagPadded != 0 {
		if len(p) == 0 || int(p[0]) >= len(p) {
			return fmt.Errorf("%w: bad HEADERS padding", ErrProtocol)
		}
		p = p[1 : len(p)-int(p[0])]
	}
	if flags&FlagPriority != 0 {
		if len(p) < 5 {
			return fmt.Errorf("%w: short HEADERS priority", ErrProtocol)
		}
		p = p[5:]
	}
	c.hdr = append(c.hdr[:0], p...)
	c.hdrStream, c.hdrEnd = id, flags&FlagEndStream != 0
	c.inHeaders = true
	if flags&FlagEndHeaders != 0 {
		return c.headersDone()
	}
	return nil
}

func (c *Client[T]) continuation(flags byte, id uint32, p []byte) error {
	if !c.inHeaders || id != c.hdrStream {
		return fmt.Errorf("%w: CONTINUATION on another stream", ErrProtocol)
	}
	if len(c.hdr)+len(p) > 1<<20 {
		return fmt.Errorf("%w: header block over 1 MiB", ErrProtocol)
	}
	c.hdr = append(c.hdr, p...)
	if flags&FlagEndHeaders != 0 {
		return c.headersDone()
	}
	return nil
}

func (c *Client[T]) rstStream(id uint32, p []byte) error {
	if len(p) != 4 {
		return fmt.Errorf("%w: RST_STREAM of %d bytes", ErrProtocol, len(p))
	}
	if s := c.streams[id]; s != nil {
		s.RST, s.RSTCode = true, binary.BigEndian.Uint32(p)
		c.finish(s)
	}
	return nil
}

// settings takes the server's settings and acknowledges them; new streams may open once the
// first have arrived (Room).
func (c *Client[T]) settings(flags byte, p []byte) error {
	if flags&FlagAck != 0 {
		return nil
	}
	if len(p)%6 != 0 {
		return fmt.Errorf("%w: SETTINGS of %d bytes", ErrProtocol, len(p))
	}
	for i := 0; i < len(p); i += 6 {
		v := binary.BigEndian.Uint32(p[i+2 : i+6])
		switch binary.BigEndian.Uint16(p[i : i+2]) {
		case SettingMaxConcurrentStreams:
			c.maxStreams = int(min(v, MaxStreamID))
		case SettingInitialWindowSize:
			if v > MaxStreamID {
				return fmt.Errorf("%w: initial window %d", ErrProtocol, v)
			}
			c.streamWin = int64(v)
		case SettingHeaderTableSize:
			if !c.Settled {
				c.tableSize = v // later changes would need a table size update: blocks stay
			}
		}
	}
	c.Settled = true
	*c.Out = AppendFrameHeader(*c.Out, 0, FrameSettings, FlagAck, 0)
	return nil
}

func (c *Client[T]) goAway(p []byte) error {
	if len(p) < 8 {
		return fmt.Errorf("%w: short GOAWAY", ErrProtocol)
	}
	last := binary.BigEndian.Uint32(p[0:4]) & MaxStreamID
	c.GoingAway = true
	// Streams the server never took will not be answered.
	for sid, s := range c.streams {
		if sid > last {
			s.RST, s.RSTCode = true, RefusedStream
			c.finish(s)
		}
	}
	return nil
}

func (c *Client[T]) windowUpdate(id uint32, p []byte) error {
	if len(p) != 4 {
		return fmt.Errorf("%w: WINDOW_UPDATE of %d bytes", ErrProtocol, len(p))
	}
	if id == 0 {
		c.sendWindow += int64(binary.BigEndian.Uint32(p) & MaxStreamID)
	}
	return nil
}

// headersDone decodes a complete header block. Every block is decoded, even for a stream that is
// gone, because HPACK's dynamic table must follow the server's.
func (c *Client[T]) headersDone() error {
	c.cur = c.streams[c.hdrStream]
	_, err := c.dec.Write(c.hdr)
	if err == nil {
		err = c.dec.Close()
	}
	c.hdr = c.hdr[:0]
	c.inHeaders = false
	if err != nil {
		c.cur = nil
		return fmt.Errorf("%w: HPACK: %v", ErrProtocol, err)
	}
	if s := c.cur; s != nil && c.hdrEnd {
		c.finish(s)
	}
	c.cur = nil
	return nil
}

func (c *Client[T]) onField(f hpack.HeaderField) {
	s := c.cur
	if s == nil {
		return
	}
	if f.Name == ":status" {
		s.Status, _ = strconv.Atoi(f.Value)
		return
	}
	for _, k := range c.Keep {
		if f.Name == k {
			s.Fields = append(s.Fields, Field{Name: f.Name, Value: f.Value})
			return
		}
	}
}

func (c *Client[T]) finish(s *Stream[T]) {
	if _, ok := c.streams[s.ID]; !ok {
		return
	}
	delete(c.streams, s.ID)
	c.Finished = append(c.Finished, s)
}
