package netrpcdriver

import (
	"flag"
	"fmt"

	"github.com/protobench/protobench/internal/loadgen"
)

// DeclareFlags implements loadgen.FlagDeclarer.
func (Driver) DeclareFlags(fs *flag.FlagSet) func(*loadgen.Config) error {
	client := fs.String("netrpc-client", ClientLean, "netrpc: lean (the generator's own client on the event loops, in both models; net/rpc's when churning) or net/rpc (always)")
	return func(cfg *loadgen.Config) error {
		if *client != ClientLean && *client != ClientNetRPC {
			return fmt.Errorf("--netrpc-client must be %s or %s, got %q", ClientLean, ClientNetRPC, *client)
		}
		cfg.Options["netrpc_client"] = *client
		return nil
	}
}
