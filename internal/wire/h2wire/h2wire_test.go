package h2wire

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/http2/hpack"
)

var testFields = []Field{
	{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"}, {Name: ":path", Value: "/protobench.v1.Bench/GetUser"},
	{Name: ":authority", Value: "127.0.0.1:50051"}, {Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
}

// decodeBlocks decodes blocks in order with one decoder, as a server does on one connection.
func decodeBlocks(t *testing.T, blocks ...[]byte) [][]Field {
	t.Helper()
	var out [][]Field
	var cur []Field
	dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) { cur = append(cur, Field{Name: f.Name, Value: f.Value}) })
	for _, b := range blocks {
		cur = nil
		if _, err := dec.Write(b); err != nil {
			t.Fatalf("block % x: %v", b, err)
		}
		if err := dec.Close(); err != nil {
			t.Fatal(err)
		}
		out = append(out, cur)
	}
	return out
}

// After the first request, a block is one byte per field, and a server's decoder reads the same
// fields from every block.
func TestHeaderBlocksIndexAfterTheFirst(t *testing.T) {
	b := EncodeHeaders(testFields, 4096)
	if len(b.Steady) != len(testFields) {
		t.Errorf("steady block is %d bytes, want one per field (%d)", len(b.Steady), len(testFields))
	}
	for i, got := range decodeBlocks(t, b.First, b.Steady, b.Steady) {
		if len(got) != len(testFields) {
			t.Fatalf("block %d decoded to %v, want %v", i, got, testFields)
		}
		for j := range got {
			if got[j] != testFields[j] {
				t.Fatalf("block %d field %d = %v, want %v", i, j, got[j], testFields[j])
			}
		}
	}
}

// A table too small for the fields (or none at all) gets literals that never enter it.
func TestHeaderBlocksWithoutRoom(t *testing.T) {
	for _, size := range []uint32{0, 64} {
		b := EncodeHeaders(testFields, size)
		if !bytes.Equal(b.First, b.Steady) {
			t.Errorf("table of %d bytes: first and steady blocks differ", size)
		}
		dec := decodeBlocks(t, b.Steady, b.Steady)
		if len(dec[1]) != len(testFields) {
			t.Errorf("table of %d bytes: decoded %v", size, dec[1])
		}
	}
}

// A whole exchange: SETTINGS, a reply with trailers, a reset stream and a GOAWAY.
func TestClientFrames(t *testing.T) {
	var out []byte
	c := &Client[int]{Out: &out, Keep: []string{"grpc-status"}}
	c.Reset()
	if !bytes.HasPrefix(out, []byte(ClientPreface)) {
		t.Fatal("no client preface")
	}
	out = out[:0]
	var in []byte
	in = AppendSettings(in, [][2]uint32{{SettingMaxConcurrentStreams, 2}})
	if n, err := c.Frames(in); err != nil || n != len(in) || !c.Settled {
		t.Fatalf("settings: n %d err %v settled %v", n, err, c.Settled)
	}
	if c.Room(10, 5) != 2 {
		t.Fatalf("room %d, want the server's 2 streams", c.Room(10, 5))
	}
	blocks := EncodeHeaders(testFields, c.HeaderTableSize())
	s1 := c.Open(&blocks, []byte("hello"), 1)
	s3 := c.Open(&blocks, nil, 3)
	if c.Room(10, 5) != 0 || s1.ID != 1 || s3.ID != 3 {
		t.Fatalf("room %d ids %d %d", c.Room(10, 5), s1.ID, s3.ID)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	in = AppendFrameHeader(nil, hb.Len(), FrameHeaders, FlagEndHeaders, 1)
	in = append(in, hb.Bytes()...)
	in = append(AppendFrameHeader(in, 3, FrameData, 0, 1), "abc"...)
	hb.Reset()
	_ = enc.WriteField(hpack.HeaderField{Name: "grpc-status", Value: "0"})
	in = AppendFrameHeader(in, hb.Len(), FrameHeaders, FlagEndHeaders|FlagEndStream, 1)
	in = append(in, hb.Bytes()...)
	in = append(AppendFrameHeader(in, 4, FrameRSTStream, 0, 3), 0, 0, 0, 8)
	in = append(AppendFrameHeader(in, 8, FrameGoAway, 0, 0), 0, 0, 0, 3, 0, 0, 0, 0)
	partial := AppendFrameHeader(nil, 4, FrameWindowUpdate, 0, 0)
	n, err := c.Frames(append(in, partial...))
	if err != nil || n != len(in) {
		t.Fatalf("n %d of %d, err %v", n, len(in), err)
	}
	if len(c.Finished) != 2 || c.Inflight() != 0 || !c.GoingAway {
		t.Fatalf("finished %d inflight %d going away %v", len(c.Finished), c.Inflight(), c.GoingAway)
	}
	r, rst := c.Finished[0], c.Finished[1]
	if r.Status != 200 || string(r.Data) != "abc" || len(r.Fields) != 1 || r.Fields[0].Value != "0" || r.Req != 1 {
		t.Errorf("reply %+v", r)
	}
	if !rst.RST || rst.RSTCode != Cancel {
		t.Errorf("reset stream %+v", rst)
	}
	if _, err := c.Frames(AppendFrameHeader(nil, 0, FramePushPromise, 0, 0)); err == nil || !strings.Contains(err.Error(), "PUSH_PROMISE") {
		t.Errorf("push promise: %v", err)
	}
}

// FuzzClientFrames feeds what a server might send to a client with three streams open: it must
// never panic, never claim more bytes than it got, and end each stream at most once.
func FuzzClientFrames(f *testing.F) {
	f.Add(AppendSettings(nil, [][2]uint32{{SettingHeaderTableSize, 0}}))
	f.Fuzz(func(t *testing.T, in []byte) {
		var out []byte
		c := &Client[int]{Out: &out, Keep: []string{"grpc-status", "grpc-message"}}
		c.Reset()
		blocks := EncodeHeaders(testFields, 4096)
		for i := 0; i < 3; i++ {
			c.Open(&blocks, []byte("x"), i)
		}
		n, _ := c.Frames(in)
		if n < 0 || n > len(in) {
			t.Fatalf("used %d of %d bytes", n, len(in))
		}
		if got := len(c.Finished) + c.Inflight(); got != 3 {
			t.Fatalf("finished %d + in flight %d streams, want 3", len(c.Finished), c.Inflight())
		}
		seen := map[uint32]bool{}
		for _, s := range c.Finished {
			if seen[s.ID] {
				t.Fatalf("stream %d ended twice", s.ID)
			}
			seen[s.ID] = true
		}
	})
}

// FuzzHeaderBlocks checks that any field a request may carry reads back the same from the first
// and the steady blocks, whatever table size the server allows.
func FuzzHeaderBlocks(f *testing.F) {
	f.Add("x-api-key", "secret", uint32(4096))
	f.Add("accept", "application/x-protobuf", uint32(100))
	f.Fuzz(func(t *testing.T, name, value string, table uint32) {
		fields := append(append([]Field{}, testFields...), Field{Name: name, Value: value})
		b := EncodeHeaders(fields, table)
		var cur []Field
		dec := hpack.NewDecoder(min(table, 4096), func(f hpack.HeaderField) { cur = append(cur, Field{Name: f.Name, Value: f.Value}) })
		for i, block := range [][]byte{b.First, b.Steady, b.Steady} {
			cur = nil
			if _, err := dec.Write(block); err != nil {
				t.Fatalf("block %d: %v", i, err)
			}
			if err := dec.Close(); err != nil {
				t.Fatalf("block %d: %v", i, err)
			}
			if len(cur) != len(fields) || cur[len(cur)-1] != fields[len(fields)-1] {
				t.Fatalf("block %d decoded %q, want %q", i, cur, fields)
			}
		}
	})
}
