package runner

import (
	"strings"
	"testing"
)

// TestRedactURL: run.json and errors keep a published Prometheus' address, never its password.
func TestRedactURL(t *testing.T) {
	got := redactURL("http://protobench:s3cret@10.0.0.2:9090")
	if strings.Contains(got, "s3cret") || !strings.Contains(got, "10.0.0.2:9090") {
		t.Errorf("redactURL = %q", got)
	}
	if got := redactURL("http://172.18.0.2:9090"); got != "http://172.18.0.2:9090" {
		t.Errorf("a URL without a password changed: %q", got)
	}
}
