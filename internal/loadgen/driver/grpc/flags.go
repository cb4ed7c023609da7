package grpcdriver

import (
	"flag"
	"fmt"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/protoreq"
)

// DeclareFlags implements loadgen.FlagDeclarer.
func (Driver) DeclareFlags(fs *flag.FlagSet) func(*loadgen.Config) error {
	client := fs.String("grpc-client", ClientLean, "grpc: lean (the generator's own HTTP/2 client on the event loops, for unary calls in both models; grpc-go otherwise) or grpc-go (always)")
	custom := protoreq.DeclareFlags(fs)
	return func(cfg *loadgen.Config) error {
		if *client != ClientLean && *client != ClientGRPCGo {
			return fmt.Errorf("--grpc-client must be %s or %s, got %q", ClientLean, ClientGRPCGo, *client)
		}
		cfg.Options["grpc_client"] = *client
		// A user's own service: --grpc-proto, --grpc-call and --grpc-data make a raw call.
		call, err := custom.Call()
		if err != nil || call == nil {
			return err
		}
		if cfg.Method != "" {
			return fmt.Errorf("--method %q: a call of your own is named by --grpc-call, not --method", cfg.Method)
		}
		return SetRawCall(cfg, RawCall{Path: call.Path, Request: call.Request})
	}
}
