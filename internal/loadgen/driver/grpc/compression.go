package grpcdriver

import (
	"io"

	"google.golang.org/grpc"

	"github.com/protobench/protobench/internal/loadgen"
)

// compression is the grpc-go path's dial options for the run's compression. grpc-go advertises
// every compressor registered in the process (grpc-accept-encoding), and importing
// google.golang.org/grpc/encoding/gzip registers gzip for good, so this package never imports
// it: under none the client advertises nothing, as a grpc-go client without gzip. Under gzip
// the connection carries its own codec (grpc-go's per-connection compressor, supported through
// 1.x), which compresses every request, advertises gzip and inflates gzip replies, counted.
func compression(cfg *loadgen.Config, wire *loadgen.WireBytes) []grpc.DialOption {
	if !cfg.Gzip() {
		return nil
	}
	//lint:ignore SA1019 the per-connection codec is the one way not to register gzip process-wide
	return []grpc.DialOption{grpc.WithCompressor(grpc.NewGZIPCompressor()), //nolint:staticcheck
		grpc.WithDecompressor(countingDecompressor{grpc.NewGZIPDecompressor(), wire})} //nolint:staticcheck
}

// countingDecompressor inflates a compressed reply and counts it (WireBytes.CompressedReplies).
type countingDecompressor struct {
	grpc.Decompressor //nolint:staticcheck // see compression
	wire              *loadgen.WireBytes
}

// Do implements grpc.Decompressor.
func (d countingDecompressor) Do(r io.Reader) ([]byte, error) {
	if d.wire != nil {
		d.wire.CompressedReplies.Add(1)
	}
	return d.Decompressor.Do(r)
}
