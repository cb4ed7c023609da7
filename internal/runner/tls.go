package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tlscert"
)

// TLSInfo is run.json's record of the run's certificates: made for this results folder, never
// committed (the folder's .gitignore files ignore them), and named by the CA's fingerprint.
type TLSInfo struct {
	CASHA256 string `json:"ca_sha256"`
	KeyType  string `json:"key_type"`
	Dir      string `json:"dir"` // relative to the results folder
	// NotAfter is when the certificates expire.
	NotAfter time.Time `json:"not_after,omitzero"`
	// KeyDeleted says the server's key was deleted when the last session ended; the
	// certificates, and the CA's fingerprint here, stay.
	KeyDeleted bool `json:"key_deleted,omitempty"`
	// Remade lists the sets a resume made because the folder's was incomplete or expired.
	Remade []TLSRemade `json:"remade,omitempty"`
}

// TLSRemade is one new set a resume made, and why.
type TLSRemade struct {
	At              time.Time `json:"at"`
	Why             string    `json:"why"`
	EarlierCASHA256 string    `json:"earlier_ca_sha256,omitempty"`
	CASHA256        string    `json:"ca_sha256"`
}

// The certificates' folders inside a results folder: tls/server/ holds the CA, the server
// certificate and its key (0700, the key 0600, owned by the user the servers run as), mounted
// into servers; tls/ca/ holds the CA alone, mounted into tools.
const (
	tlsDirName       = "tls"
	tlsServerDirName = "tls/server"
	tlsCADirName     = "tls/ca"
)

// KeyTypeEnv picks the certificates' key type (tlscert.KeyTypes); ECDSA P-256 when unset.
const KeyTypeEnv = "PROTOBENCH_TLS_KEY_TYPE"

// tlsMargin is how long beyond the plan's estimate a reused set must stay valid.
const tlsMargin = time.Hour

// prepareTLS makes the run's CA and server certificate when a run of the plan is TLS, and
// returns run.json's record and the compose environment that mounts them read-only: the whole
// set into servers, the CA alone into tools. A resume (prev, the folder's record) keeps the
// folder's set when it is complete and valid for the plan's length; otherwise it makes a new one
// and records why. owner, when set, gets the key (the user the servers run as).
func prepareTLS(dir string, plan *scenario.Plan, prev *TLSInfo, owner *tlscert.Owner) (*TLSInfo, map[string]string, error) {
	any := false
	for _, r := range plan.Runs {
		any = any || r.TLS
	}
	if !any {
		return prev, nil, nil
	}
	serverDir, err := filepath.Abs(filepath.Join(dir, filepath.FromSlash(tlsServerDirName)))
	if err != nil {
		return nil, nil, err
	}
	caDir := filepath.Join(filepath.Dir(serverDir), filepath.Base(tlsCADirName))
	info, err := keepOrMakeTLS(serverDir, plan, prev, owner)
	if err != nil {
		return nil, nil, err
	}
	if err := publishCA(serverDir, caDir); err != nil {
		return nil, nil, err
	}
	return info, map[string]string{
		targets.TLSDirEnv:        serverDir,
		targets.TLSCADirEnv:      caDir,
		"PROTOBENCH_TLS_CA_FILE": targets.TLSMount + "/" + tlscert.CAFile,
	}, nil
}

// keepOrMakeTLS checks the set a resumed folder holds and makes a new one when there is none
// or it cannot serve the plan.
func keepOrMakeTLS(serverDir string, plan *scenario.Plan, prev *TLSInfo, owner *tlscert.Owner) (*TLSInfo, error) {
	var why string
	if _, err := os.Stat(serverDir); err == nil || prev != nil {
		until := time.Now().Add(plan.TotalDuration + tlsMargin)
		err := tlscert.Check(serverDir, until)
		if err == nil && prev != nil {
			kept := *prev
			kept.KeyDeleted = false
			return &kept, nil
		}
		if err == nil {
			err = errors.New("run.json has no record of it")
		}
		why = err.Error()
	}
	kt, err := tlscert.ParseKeyType(os.Getenv(KeyTypeEnv))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyTypeEnv, err)
	}
	set, err := tlscert.Generate(serverDir, tlscert.Options{KeyType: kt, Hosts: targets.Names(), Owner: owner})
	if err != nil {
		return nil, err
	}
	info := &TLSInfo{CASHA256: set.CAFingerprint, KeyType: set.KeyType, Dir: tlsDirName, NotAfter: set.NotAfter.UTC()}
	if why != "" {
		remade := TLSRemade{At: time.Now().UTC(), Why: why, CASHA256: set.CAFingerprint}
		if prev != nil {
			info.Remade = append(info.Remade, prev.Remade...)
			remade.EarlierCASHA256 = prev.CASHA256
		}
		info.Remade = append(info.Remade, remade)
	}
	return info, nil
}

// publishCA copies the CA into the tools' folder, which holds nothing else.
func publishCA(serverDir, caDir string) error {
	b, err := os.ReadFile(filepath.Join(serverDir, tlscert.CAFile))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(caDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(caDir, ".gitignore"), []byte("*\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(caDir, tlscert.CAFile), b, 0o644)
}

// dropTLSKey deletes the server key of a results folder when its session ends: the key was
// made for this folder's runs only, and a later resume makes a new set.
func dropTLSKey(dir string, info *TLSInfo) error {
	if info == nil {
		return nil
	}
	err := os.Remove(filepath.Join(dir, filepath.FromSlash(tlsServerDirName), tlscert.KeyFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	info.KeyDeleted = true
	return nil
}

// serverUser is the uid:gid the registry's servers run as (compose.ServerUserEnv): the
// servers' own user (compose.ServerUID) when we run as root, who then gets the TLS key;
// otherwise the invoking user, who owns the key already. PROTOBENCH_SERVER_USER overrides it.
func serverUser() string {
	if v := os.Getenv(compose.ServerUserEnv); v != "" {
		return v
	}
	if uid := os.Getuid(); uid != 0 {
		return fmt.Sprintf("%d:%d", uid, os.Getgid())
	}
	return fmt.Sprintf("%d:%d", compose.ServerUID, compose.ServerUID)
}

// keyOwner is who gets the TLS key: user (uid:gid) when we run as root and may give it away;
// nil otherwise (we own it, and the servers run as us).
func keyOwner(user string) (*tlscert.Owner, error) {
	if os.Getuid() != 0 {
		return nil, nil
	}
	u, g, _ := strings.Cut(user, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%s=%q: want uid:gid in numbers", compose.ServerUserEnv, user)
	}
	return &tlscert.Owner{UID: uid, GID: gid}, nil
}
