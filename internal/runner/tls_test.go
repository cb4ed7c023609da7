package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tlscert"
)

func TestPrepareTLS(t *testing.T) {
	dir := t.TempDir()
	none, env, err := prepareTLS(dir, &scenario.Plan{Runs: []scenario.Run{{Target: "grpc"}}})
	if err != nil || none != nil || env != nil {
		t.Fatalf("a cleartext plan: %v %v %v; want no certificates", none, env, err)
	}
	if _, err := os.Stat(filepath.Join(dir, tlsDirName)); !os.IsNotExist(err) {
		t.Errorf("a cleartext plan made %s", tlsDirName)
	}
	plan := &scenario.Plan{Runs: []scenario.Run{{Target: "grpc", TLS: true}}}
	info, env, err := prepareTLS(dir, plan)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := tlscert.CAFingerprintOf(filepath.Join(dir, tlsDirName, tlscert.CAFile))
	if err != nil || fp != info.CASHA256 || info.KeyType != tlscert.KeyECDSA {
		t.Errorf("run.json's TLS %+v, CA on disk %s (%v)", info, fp, err)
	}
	if !strings.HasSuffix(env["PROTOBENCH_TLS_DIR"], tlsDirName) || env["PROTOBENCH_TLS_CA_FILE"] != targets.TLSMount+"/ca.pem" {
		t.Errorf("compose env %v", env)
	}
	// A resume keeps the first session's CA.
	again, _, err := prepareTLS(dir, plan)
	if err != nil || again.CASHA256 != info.CASHA256 {
		t.Errorf("resume: %+v %v; want the same CA %s", again, err, info.CASHA256)
	}
	t.Setenv(KeyTypeEnv, "dsa")
	if _, _, err := prepareTLS(t.TempDir(), plan); err == nil || !strings.Contains(err.Error(), KeyTypeEnv) {
		t.Errorf("a bad key type: %v; want an error naming %s", err, KeyTypeEnv)
	}
}

func TestServerEnvironmentTLS(t *testing.T) {
	env := serverEnvironment(scenario.Run{Target: "rest", TLS: true})
	if env[targets.TLSCertEnv] != targets.TLSMount+"/server.pem" || env[targets.TLSALPNEnv] != "h2,http/1.1" {
		t.Errorf("TLS run env %v", env)
	}
	if env := serverEnvironment(scenario.Run{Target: "rest"}); env[targets.TLSCertEnv] != "" {
		t.Errorf("a cleartext run got TLS env %v", env)
	}
}
