package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/targets"
)

// TestCustomRequestCopiesProtos: a custom gRPC target's proto, and the protos beside it that it may
// import, are copied under raw/ where tool containers read them, and the request names both the
// container's path and the host's.
func TestCustomRequestCopiesProtos(t *testing.T) {
	src := t.TempDir()
	for name, text := range map[string]string{"service.proto": "syntax = \"proto3\";", "types.proto": "syntax = \"proto3\";", "notes.txt": "x"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := &stepRunner{resultDir: t.TempDir(), rawMount: "/raw"}
	own := &scenario.CustomTarget{
		Target:  targets.Target{Name: "mine", Protocol: targets.GRPC, Port: 9000},
		Request: &scenario.Request{ProtoFile: filepath.Join(src, "service.proto"), Call: "a.v1.S/Get", Data: "{}"},
	}
	req, err := s.customRequest(scenario.Run{Target: "mine", Custom: own})
	if err != nil {
		t.Fatal(err)
	}
	if req.ProtoFile != "/raw/custom-mine/service.proto" || req.Call != "a.v1.S/Get" || req.Data != "{}" {
		t.Errorf("request %+v", req)
	}
	if want := filepath.Join(s.resultDir, "raw", "custom-mine", "service.proto"); req.HostProtoFile != want {
		t.Errorf("host proto %q, want %q", req.HostProtoFile, want)
	}
	for _, name := range []string{"service.proto", "types.proto"} {
		if _, err := os.Stat(filepath.Join(s.resultDir, "raw", "custom-mine", name)); err != nil {
			t.Errorf("%s not copied: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.resultDir, "raw", "custom-mine", "notes.txt")); err == nil {
		t.Error("a file that is not a proto was copied")
	}
	if req, err := s.customRequest(scenario.Run{Target: "grpc"}); req != nil || err != nil {
		t.Errorf("reference target: request %+v, %v; want none", req, err)
	}
}
