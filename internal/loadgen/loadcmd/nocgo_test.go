package loadcmd

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// run.sh builds the host CLI without cgo when libzmq's headers are missing; that CLI must still
// build, and must say where the ZeroMQ driver is rather than fail obscurely.
func TestCLIWithoutCgoExplainsZMQ(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	bin := filepath.Join(t.TempDir(), "protobench")
	build := exec.Command("go", "build", "-o", bin, "github.com/protobench/protobench/cmd/protobench")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "load", "--target", "zmq://127.0.0.1:1", "--duration", "1s").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("want exit 2, got %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "built without cgo") || !strings.Contains(string(out), "libzmq3-dev") {
		t.Errorf("message does not explain the missing driver:\n%s", out)
	}
}
