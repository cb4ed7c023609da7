package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
)

// NetworkName is the project's overlay network.
func (c *Client) NetworkName() string { return c.Project + "-net" }

// EnsureNetwork creates the project's attachable overlay network unless it exists. Attachable,
// so a diagnosing user can `docker run --network` into it.
func (c *Client) EnsureNetwork(ctx context.Context) error {
	name := c.NetworkName()
	if out, err := c.run(ctx, "network", "inspect", "--format", `{{index .Labels "protobench.project"}}`, name); err == nil {
		if strings.TrimSpace(out) != c.Project {
			return fmt.Errorf("a network %s exists that is not project %s's (no %s=%s label): remove it or choose another --project", name, c.Project, ProjectLabel, c.Project)
		}
		return nil
	}
	_, err := c.run(ctx, c.networkCreateArgs(ctx)...)
	return err
}

// networkCreateArgs creates the project's network with the MTU of the interface this node
// advertises to the swarm, when docker says which that is.
func (c *Client) networkCreateArgs(ctx context.Context) []string {
	args := []string{"network", "create", "--driver", "overlay", "--attachable", "--label", ProjectLabel + "=" + c.Project}
	if addr, err := c.run(ctx, "info", "--format", "{{.Swarm.NodeAddr}}"); err == nil {
		if mtu := underlayMTU(net.ParseIP(strings.TrimSpace(addr))); mtu > 0 {
			args = append(args, "--opt", fmt.Sprintf("%s=%d", mtuOption, mtu))
		}
	}
	return append(args, c.NetworkName())
}

// mtuOption is the overlay driver's option for the MTU of the network under it; its tasks get 50
// bytes less (the VXLAN header).
const mtuOption = "com.docker.network.driver.mtu"

// underlayMTU is the MTU of the local interface that holds addr (the address this node
// advertises to the swarm, which VXLAN packets leave by), at most 1500, or 0 when no interface
// holds it. Without the option the overlay assumes 1500, which on a LAN of a smaller MTU (1400
// on the build machine's eth0) makes full-size packets too big for the path between hosts. The
// cap keeps a loopback advertise address (MTU 65536, a single node) at Ethernet's size, so a
// single node measures with the packet size two hosts would use.
func underlayMTU(addr net.IP) int {
	if addr == nil {
		return 0
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return 0
	}
	for _, ifc := range ifaces {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.Equal(addr) {
				return min(ifc.MTU, 1500)
			}
		}
	}
	return 0
}

// Network is the project's overlay network as docker describes it.
type Network struct {
	Name   string `json:"name"`
	Driver string `json:"driver"`
	MTU    int    `json:"mtu"`
	Subnet string `json:"subnet"`
}

// InspectNetwork describes the project's overlay. Docker leaves the MTU option unset unless it
// was given, and the overlay driver then uses 1450 (1500 less the VXLAN header).
func (c *Client) InspectNetwork(ctx context.Context) (Network, error) {
	out, err := c.run(ctx, "network", "inspect", "--format", "{{json .}}", c.NetworkName())
	if err != nil {
		return Network{}, err
	}
	var raw struct {
		Name, Driver string
		Options      map[string]string
		IPAM         struct{ Config []struct{ Subnet string } }
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		return Network{}, fmt.Errorf("docker network inspect: %w", err)
	}
	n := Network{Name: raw.Name, Driver: raw.Driver, MTU: 1450}
	if v := raw.Options["com.docker.network.driver.mtu"]; v != "" {
		fmt.Sscan(v, &n.MTU)
	}
	if len(raw.IPAM.Config) > 0 {
		n.Subnet = raw.IPAM.Config[0].Subnet
	}
	return n, nil
}
