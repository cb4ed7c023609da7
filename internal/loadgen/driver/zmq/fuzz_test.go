package zmqdriver

import (
	"testing"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/netloop"
)

// FuzzZMTPReplies feeds what a ROUTER might send after its greeting to a lean DEALER with
// requests 1 to 64 in flight: parsing never panics, keeps no more than it got, and each reply
// ends a request at most once.
func FuzzZMTPReplies(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		cfg := &loadgen.Config{Method: contract.MethodGetUser, Pattern: PatternDealer, Options: map[string]string{}}
		req, err := buildRequest(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := &leanDealer{cfg: cfg, slots: 64, req: req, conn: netloop.NewConn(&loadgen.WireBytes{}), inflight: netloop.Inflight[uint64]{}}
		for id := uint64(1); id <= 64; id++ {
			c.inflight[id] = netloop.Pending{}
		}
		c.conn.In = append([]byte(nil), in...)
		c.conn.N = len(in)
		replies, err := c.parse(nil)
		if c.conn.N < 0 || c.conn.N > len(in) {
			t.Fatalf("kept %d of %d bytes", c.conn.N, len(in))
		}
		if len(c.inflight)+len(replies) != 64 {
			t.Fatalf("%d replies left %d requests in flight (err %v)", len(replies), len(c.inflight), err)
		}
	})
}
