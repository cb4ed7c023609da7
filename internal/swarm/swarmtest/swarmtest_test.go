package swarmtest

import (
	"strings"
	"testing"
)

// TestUseGivesAManager checks the swarm Use hands out: this daemon is a manager of it.
func TestUseGivesAManager(t *testing.T) {
	s := Use(t)
	out, err := run(s.Docker, "node", "inspect", "--format", "{{.ManagerStatus.Leader}}", "self")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.TrimSpace(out) != "true" && !s.Created {
		t.Logf("this node is a manager but not the leader")
	} else if strings.TrimSpace(out) != "true" {
		t.Fatalf("the swarm this test created has no leader here: %q", out)
	}
}
