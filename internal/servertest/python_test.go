package servertest_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"github.com/protobench/protobench/internal/repo"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/stats"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/servertest"
)

// TestPythonContractMatchesGo runs servers/python-grpc/contract.py and compares its payload bytes
// and user records with internal/contract's, so both languages' servers return identical data.
func TestPythonContractMatchesGo(t *testing.T) {
	if err := servertest.CheckPython(); err != nil {
		t.Fatal(err)
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{0, 1, 55, 56, 57, 64, 1000, 1 << 20}
	ids := []int64{0, 1, 42, -1, -7, 1 << 40, -(1 << 62), 9223372036854775807, -9223372036854775808}
	script := `
import json, sys
import contract
sizes, ids = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(json.dumps({
  "payloads": [contract.payload(n).hex() for n in sizes],
  "users": [dict(zip(("id", "name", "email", "age"), contract.user_by_id(i))) for i in ids],
}))
`
	sj, _ := json.Marshal(sizes)
	ij, _ := json.Marshal(ids)
	cmd := exec.Command(servertest.PythonInterpreter(), "-c", script, string(sj), string(ij))
	cmd.Dir = filepath.Join(root, "servers/python-grpc")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var got struct {
		Payloads []string        `json:"payloads"`
		Users    []contract.User `json:"users"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python output: %v: %.200s", err, out)
	}
	for i, n := range sizes {
		b, _ := hex.DecodeString(got.Payloads[i])
		if !bytes.Equal(b, contract.Payload(n)) {
			t.Errorf("payload(%d) differs from contract.Payload(%d)", n, n)
		}
	}
	for i, id := range ids {
		if want := contract.UserByID(id); got.Users[i] != want {
			t.Errorf("user_by_id(%d) = %+v, want %+v", id, got.Users[i], want)
		}
	}
}

// compressionSeen records whether any response payload arrived compressed.
type compressionSeen struct{ compressed atomic.Bool }

func (c *compressionSeen) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}
func (c *compressionSeen) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (c *compressionSeen) HandleConn(context.Context, stats.ConnStats) {}
func (c *compressionSeen) HandleRPC(_ context.Context, s stats.RPCStats) {
	if in, ok := s.(*stats.InPayload); ok && in.CompressedLength < in.Length {
		c.compressed.Store(true)
	}
}

// TestPythonGzip checks that PROTOBENCH_COMPRESSION=gzip really compresses responses (seed 001), in
// both server modes, and that the default does not.
func TestPythonGzip(t *testing.T) {
	tests := []struct {
		name, mode, gzip string
		wantCompressed   bool
	}{
		{"sync gzip", "sync", "gzip", true},
		{"aio gzip", "aio", "gzip", true},
		{"sync plain", "sync", "none", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ep := servertest.Start(t, servertest.PythonGRPC,
				servertest.WithKnob("PROTOBENCH_PY_MODE", tt.mode), servertest.WithKnob("PROTOBENCH_COMPRESSION", tt.gzip))
			seen := &compressionSeen{}
			conn, err := grpc.NewClient(ep.Main, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithStatsHandler(seen))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			want := contract.Payload(64 << 10)
			resp, err := benchpb.NewBenchClient(conn).Echo(context.Background(), &benchpb.EchoRequest{Payload: want})
			if err != nil || !bytes.Equal(resp.GetPayload(), want) {
				t.Fatalf("Echo: %v", err)
			}
			if seen.compressed.Load() != tt.wantCompressed {
				t.Fatalf("response compressed = %v, want %v", seen.compressed.Load(), tt.wantCompressed)
			}
		})
	}
}
