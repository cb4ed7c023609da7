package scenario

import "testing"

func TestStackCPUSetFollowsTheSlack(t *testing.T) {
	overridden := AutoLayout(4)
	overridden.ObservabilityCPUSet = overridden.ClientCPUSet
	cases := []struct {
		name        string
		layout      Layout
		clientBound bool
		want        string
	}{
		{"2 cores, lean tool: the client's core", AutoLayout(2), false, "1"},
		{"2 cores, client-bound tool: the server's core", AutoLayout(2), true, "0"},
		{"1 core: nowhere else", AutoLayout(1), true, "0"},
		{"4 cores: a core of its own, whatever the tool", AutoLayout(4), true, "3"},
		{"override onto the client's cores: the server's", overridden, true, overridden.ServerCPUSet},
	}
	for _, c := range cases {
		if got := c.layout.StackCPUSet(c.clientBound); got != c.want {
			t.Errorf("%s: StackCPUSet(%v) = %q, want %q", c.name, c.clientBound, got, c.want)
		}
	}
}
