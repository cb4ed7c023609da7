package main

import (
	"context"
	"strings"
	"testing"
)

// TestHelpListsUserCommandsFirst: `protobench --help` lists the user's commands, and generate,
// which only changing protobench needs, apart under the developers' heading.
func TestHelpListsUserCommandsFirst(t *testing.T) {
	var out strings.Builder
	if code := dispatch(context.Background(), []string{"--help"}, &out, &out); code != 0 {
		t.Fatalf("--help exited %d", code)
	}
	help := out.String()
	user, dev, ok := strings.Cut(help, "for developers of protobench:")
	if !ok {
		t.Fatalf("no developers' heading in:\n%s", help)
	}
	for _, c := range []string{"run", "doctor", "list", "load", "images", "down", "status", "report", "gate", "compare"} {
		if !strings.Contains(user, "\n  "+c+" ") {
			t.Errorf("user command %s is not among the commands:\n%s", c, user)
		}
	}
	if strings.Contains(user, "generate") || !strings.Contains(dev, "\n  generate ") {
		t.Errorf("generate must be listed under the developers' heading only:\n%s", help)
	}
}
