package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tlscert"
)

var tlsPlan = &scenario.Plan{Runs: []scenario.Run{{Target: "grpc", TLS: true}}, TotalDuration: time.Hour}

// testOwner is the servers' user when the test runs as root (who may give files away), else nil.
func testOwner() *tlscert.Owner {
	if os.Getuid() != 0 {
		return nil
	}
	return &tlscert.Owner{UID: compose.ServerUID, GID: compose.ServerUID}
}

func TestPrepareTLSCleartext(t *testing.T) {
	dir := t.TempDir()
	none, env, err := prepareTLS(dir, &scenario.Plan{Runs: []scenario.Run{{Target: "grpc"}}}, nil, nil)
	if err != nil || none != nil || env != nil {
		t.Fatalf("a cleartext plan: %v %v %v; want no certificates", none, env, err)
	}
	if _, err := os.Stat(filepath.Join(dir, tlsDirName)); !os.IsNotExist(err) {
		t.Errorf("a cleartext plan made %s", tlsDirName)
	}
	t.Setenv(KeyTypeEnv, "dsa")
	if _, _, err := prepareTLS(t.TempDir(), tlsPlan, nil, nil); err == nil || !strings.Contains(err.Error(), KeyTypeEnv) {
		t.Errorf("a bad key type: %v; want an error naming %s", err, KeyTypeEnv)
	}
}

// TestTLSKeyModes: the key folder is 0700 and the key 0600, both owned by the user the servers
// run as; the tools' folder holds the CA alone; the compose environment mounts each where it
// belongs; and the key is gone when the session ends, its CA's fingerprint kept.
func TestTLSKeyModes(t *testing.T) {
	dir := t.TempDir()
	owner := testOwner()
	info, env, err := prepareTLS(dir, tlsPlan, nil, owner)
	if err != nil {
		t.Fatal(err)
	}
	serverDir, caDir := env[targets.TLSDirEnv], env[targets.TLSCADirEnv]
	if serverDir != filepath.Join(dir, "tls", "server") || caDir != filepath.Join(dir, "tls", "ca") || env["PROTOBENCH_TLS_CA_FILE"] != targets.TLSMount+"/ca.pem" {
		t.Errorf("compose env %v", env)
	}
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{serverDir, os.ModeDir | 0o700}, {filepath.Join(serverDir, tlscert.KeyFile), 0o600}, {filepath.Join(serverDir, tlscert.CertFile), 0o644}} {
		st, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != c.mode {
			t.Errorf("%s: mode %v, want %v", c.path, st.Mode(), c.mode)
		}
		if owner != nil && st.Sys().(*syscall.Stat_t).Uid != uint32(owner.UID) {
			t.Errorf("%s: owner %d, want the servers' user %d", c.path, st.Sys().(*syscall.Stat_t).Uid, owner.UID)
		}
	}
	entries, err := os.ReadDir(caDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{".gitignore", tlscert.CAFile}) {
		t.Errorf("the tools' folder holds %v, want the CA alone", names)
	}
	fp, err := tlscert.CAFingerprintOf(filepath.Join(caDir, tlscert.CAFile))
	if err != nil || fp != info.CASHA256 || info.KeyType != tlscert.KeyECDSA {
		t.Errorf("run.json's TLS %+v, CA on disk %s (%v)", info, fp, err)
	}
	if err := dropTLSKey(dir, info); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(serverDir, tlscert.KeyFile)); !os.IsNotExist(err) || !info.KeyDeleted || info.CASHA256 != fp {
		t.Errorf("after the run: key %v, record %+v; want the key gone and the fingerprint kept", err, info)
	}
}

// TestResumeChecksTheSet: a resume keeps a complete set valid for the plan; a set whose key was
// deleted, that has expired, or that expires before the plan would end is replaced by a new
// one, and run.json's record says why, with the earlier CA.
func TestResumeChecksTheSet(t *testing.T) {
	dir := t.TempDir()
	first, _, err := prepareTLS(dir, tlsPlan, nil, testOwner())
	if err != nil {
		t.Fatal(err)
	}
	kept, _, err := prepareTLS(dir, tlsPlan, first, testOwner())
	if err != nil || kept.CASHA256 != first.CASHA256 || len(kept.Remade) > 0 {
		t.Fatalf("resume of a good set: %+v %v; want the same CA %s", kept, err, first.CASHA256)
	}
	serverDir := filepath.Join(dir, "tls", "server")
	now := time.Now()
	cases := []struct {
		name  string
		spoil func(t *testing.T)
		why   string
	}{
		{"key deleted", func(t *testing.T) { os.Remove(filepath.Join(serverDir, tlscert.KeyFile)) }, tlscert.KeyFile},
		{"expired", func(t *testing.T) {
			if _, err := tlscert.Generate(serverDir, tlscert.Options{NotBefore: now.Add(-10 * 24 * time.Hour), NotAfter: now.Add(-24 * time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}, "expires"},
		{"expires during the plan", func(t *testing.T) {
			if _, err := tlscert.Generate(serverDir, tlscert.Options{NotAfter: now.Add(10 * time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}, "expires"},
	}
	prev := kept
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.spoil(t)
			got, env, err := prepareTLS(dir, tlsPlan, prev, testOwner())
			if err != nil {
				t.Fatal(err)
			}
			if got.CASHA256 == prev.CASHA256 || len(got.Remade) != len(prev.Remade)+1 {
				t.Fatalf("record %+v after %s; want a new CA and one more remade entry", got, c.name)
			}
			r := got.Remade[len(got.Remade)-1]
			if !strings.Contains(r.Why, c.why) || r.EarlierCASHA256 != prev.CASHA256 || r.CASHA256 != got.CASHA256 {
				t.Errorf("remade %+v; want why naming %q, the earlier CA %s", r, c.why, prev.CASHA256)
			}
			if err := tlscert.Check(env[targets.TLSDirEnv], now.Add(tlsPlan.TotalDuration)); err != nil {
				t.Errorf("the new set: %v", err)
			}
			prev = got
		})
	}
}

// TestServerUserIsTheImagesUser: the uid that gets the key is the one the server images run as.
func TestServerUserIsTheImagesUser(t *testing.T) {
	for _, f := range []string{"images/protobench/Dockerfile", "servers/python-grpc/Dockerfile"} {
		b, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "--uid "+strconv.Itoa(compose.ServerUID)) {
			t.Errorf("%s does not make user %d, the owner of the TLS key", f, compose.ServerUID)
		}
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
