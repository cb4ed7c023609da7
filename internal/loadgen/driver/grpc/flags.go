package grpcdriver

import (
	"flag"
	"fmt"

	"github.com/protobench/protobench/internal/loadgen"
)

// DeclareFlags implements loadgen.FlagDeclarer.
func (Driver) DeclareFlags(fs *flag.FlagSet) func(*loadgen.Config) error {
	client := fs.String("grpc-client", ClientLean, "grpc: lean (the generator's own HTTP/2 client for unary calls in the closed model; grpc-go otherwise) or grpc-go (always)")
	return func(cfg *loadgen.Config) error {
		if *client != ClientLean && *client != ClientGRPCGo {
			return fmt.Errorf("--grpc-client must be %s or %s, got %q", ClientLean, ClientGRPCGo, *client)
		}
		cfg.Options["grpc_client"] = *client
		return nil
	}
}
