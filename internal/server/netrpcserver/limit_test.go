package netrpcserver

import (
	"bytes"
	"encoding/gob"
	"math/rand/v2"
	"net/rpc"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/contract"
)

// gobStream is what a net/rpc client writes for Bench.Echo calls with these payload sizes: gob
// messages of every length-prefix width, type definitions included.
func gobStream(t *testing.T, sizes ...int) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := gob.NewEncoder(&buf)
	for i, n := range sizes {
		if err := enc.Encode(&rpc.Request{ServiceMethod: "Bench.Echo", Seq: uint64(i)}); err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(&EchoArgs{Payload: contract.Payload(n)}); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestScanFollowsGobFraming feeds real gob output through the scanner in chunks of random sizes:
// it must accept every message under the limit, end exactly on a message boundary, and refuse
// the stream once the limit is below its largest message.
func TestScanFollowsGobFraming(t *testing.T) {
	sizes := []int{0, 1, 100, 127, 128, 255, 256, 4096, 65535, 65536, 1 << 20}
	stream := gobStream(t, sizes...)
	for _, limit := range []uint64{1<<20 + 1024, 1<<20 - 1} {
		c := &limitedConn{maxMessage: limit}
		var err error
		for b := stream; len(b) > 0 && err == nil; {
			n := min(len(b), 1+rand.IntN(3000))
			err = c.scan(b[:n])
			b = b[n:]
		}
		switch {
		case limit > 1<<20 && (err != nil || c.inMessage()):
			t.Fatalf("limit %d: %v, in a message at the end: %v", limit, err, c.inMessage())
		case limit < 1<<20 && (err == nil || !strings.Contains(err.Error(), "exceeds the limit")):
			t.Fatalf("limit %d: %v, want the message of the 1 MiB payload refused", limit, err)
		}
		if limit > 1<<20 && c.started < uint64(2*len(sizes)) {
			t.Fatalf("counted %d messages, want at least the %d Encode calls", c.started, 2*len(sizes))
		}
	}
}
