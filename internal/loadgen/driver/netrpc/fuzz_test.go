package netrpcdriver

import (
	"testing"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/netloop"
)

// FuzzGobReplies feeds what a server might send to a lean connection with calls 1 to 64 in
// flight: framing and decoding never panic, each reply ends a call at most once, and the decoder
// never reads past the last complete reply.
func FuzzGobReplies(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		cfg := &loadgen.Config{Method: contract.MethodGetUser, Options: map[string]string{}}
		w, err := (&conn{cfg: cfg}).newCall()
		if err != nil {
			t.Fatal(err)
		}
		c := &leanConn{cfg: cfg, slots: 64, call: w, conn: netloop.NewConn(&loadgen.WireBytes{})}
		c.conn.In = append([]byte(nil), in...)
		c.conn.N = len(in)
		if err := c.resetStreams(); err != nil {
			t.Fatal(err)
		}
		for seq := uint64(1); seq <= 64; seq++ {
			c.inflight[seq] = netloop.Pending{}
		}
		if err := c.frame(); err != nil {
			return
		}
		if c.scan > c.conn.N || c.limit > c.scan {
			t.Fatalf("framed to %d, limit %d, of %d bytes", c.scan, c.limit, c.conn.N)
		}
		ended := 0
		for c.ready > 0 {
			if _, _, err := c.decodeReply(); err != nil {
				return
			}
			ended++
			if c.rpos > c.limit {
				t.Fatalf("decoder read to %d, past the last complete reply at %d", c.rpos, c.limit)
			}
		}
		if len(c.inflight) != 64-ended {
			t.Fatalf("%d replies left %d calls in flight", ended, len(c.inflight))
		}
	})
}
