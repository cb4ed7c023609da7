package runner

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tlscert"
)

// TLSInfo is run.json's record of the run's certificates: made for this results folder, never
// committed (the folder's tls/.gitignore ignores them), and named by the CA's fingerprint.
type TLSInfo struct {
	CASHA256 string `json:"ca_sha256"`
	KeyType  string `json:"key_type"`
	Dir      string `json:"dir"` // relative to the results folder
}

// tlsDirName is the certificates' folder inside a results folder.
const tlsDirName = "tls"

// KeyTypeEnv picks the certificates' key type (tlscert.KeyTypes); ECDSA P-256 when unset.
const KeyTypeEnv = "PROTOBENCH_TLS_KEY_TYPE"

// prepareTLS makes the run's CA and server certificate when a run of the plan is TLS (or keeps
// those of the folder a resume continues), and returns the compose environment that mounts them
// read-only into servers and tools.
func prepareTLS(dir string, plan *scenario.Plan) (*TLSInfo, map[string]string, error) {
	any := false
	for _, r := range plan.Runs {
		any = any || r.TLS
	}
	if !any {
		return nil, nil, nil
	}
	certDir, err := filepath.Abs(filepath.Join(dir, tlsDirName))
	if err != nil {
		return nil, nil, err
	}
	info := &TLSInfo{Dir: tlsDirName}
	if fp, err := tlscert.CAFingerprintOf(filepath.Join(certDir, tlscert.CAFile)); err == nil {
		info.CASHA256 = fp
		info.KeyType = "as made by the first session"
	} else {
		kt, err := tlscert.ParseKeyType(os.Getenv(KeyTypeEnv))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", KeyTypeEnv, err)
		}
		set, err := tlscert.Generate(certDir, tlscert.Options{KeyType: kt, Hosts: targets.Names()})
		if err != nil {
			return nil, nil, err
		}
		info.CASHA256, info.KeyType = set.CAFingerprint, set.KeyType
	}
	return info, map[string]string{
		targets.TLSDirEnv:        certDir,
		"PROTOBENCH_TLS_CA_FILE": targets.TLSMount + "/" + tlscert.CAFile,
	}, nil
}
