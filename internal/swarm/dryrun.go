package swarm

import "context"

// The command lines below are what the client runs, for `--dry-run --engine swarm`: a user reads
// them, or pastes them into a shell, without a swarm being touched.

// DryRunSuffix stands where a real config name has its unique suffix.
const DryRunSuffix = "dry-run"

// CreateServiceLine is the `docker service create` command that CreateService runs for spec.
func (c *Client) CreateServiceLine(spec ServiceSpec) string {
	return shellJoin(append([]string{c.Docker}, c.owned(spec).CreateArgs()...))
}

// CreateConfigLine is the `docker config create` command (the data on its stdin) of the config
// CreateConfig would make for name, with DryRunSuffix for its unique suffix; and that name.
func (c *Client) CreateConfigLine(name string) (line, full string) {
	full = c.configName(name, DryRunSuffix)
	return shellJoin(append([]string{c.Docker}, c.configCreateArgs(full)...)), full
}

// CreateNetworkLine is the `docker network create` command that EnsureNetwork runs when the
// project's network does not exist yet. It asks docker (read-only) for the swarm's address, to
// give the network that interface's MTU.
func (c *Client) CreateNetworkLine(ctx context.Context) string {
	return shellJoin(append([]string{c.Docker}, c.networkCreateArgs(ctx)...))
}

// RemoveServiceLine is the `docker service rm` command of service name.
func (c *Client) RemoveServiceLine(name string) string {
	return shellJoin([]string{c.Docker, "service", "rm", name})
}
