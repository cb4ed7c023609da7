package swarm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// transferLog builds a job's log as the wrapper prints it: the entries as a gzipped tar,
// base64 in 76-character lines between the markers.
func transferLog(t *testing.T, entries [][2]string) []byte {
	t.Helper()
	var tb bytes.Buffer
	zw := gzip.NewWriter(&tb)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e[0], Mode: 0o644, Size: int64(len(e[1])), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	enc := base64.StdEncoding.EncodeToString(tb.Bytes())
	var log strings.Builder
	log.WriteString(transferBegin + " gzip\n")
	for len(enc) > 76 {
		log.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	log.WriteString(enc + "\n" + transferEnd + "\n")
	return []byte(log.String())
}

// status is the wrapper's own entries of a tool that exited 0.
var status = [][2]string{{"stdout", "ok\n"}, {"stderr", ""}, {"exit", "0\n"}}

// TestUnpackTransferRefusesBadTransfers: a file named to land outside raw/, or too large, or a
// transfer too large in all, is an error naming it, and no file comes back to be written.
func TestUnpackTransferRefusesBadTransfers(t *testing.T) {
	lim := transferLimits{file: 1000, total: 1500}
	big := strings.Repeat("x", 1001)
	half := strings.Repeat("y", 800)
	for _, tc := range []struct {
		name    string
		entries [][2]string
		want    string
	}{
		{"a name starting with ..", [][2]string{{"raw/../../etc/cron.d/x", "boom"}}, `"../../etc/cron.d/x" is not a plain name inside /raw`},
		{"a name that is ..", [][2]string{{"raw/..", "boom"}}, `".." is not a plain name`},
		{"an absolute name", [][2]string{{"/etc/passwd", "boom"}}, `entry "/etc/passwd" is neither the wrapper's nor under the job's RawDir`},
		{"an absolute name under raw", [][2]string{{"raw//etc/passwd", "boom"}}, `"/etc/passwd" is not a plain name`},
		{"a parent entry outside raw", [][2]string{{"../x", "boom"}}, `entry "../x" is neither`},
		{"a name cleaned into another", [][2]string{{"raw/a/../b", "boom"}}, `"a/../b" is not a plain name`},
		{"a file over the per-file cap", [][2]string{{"raw/hist.hgrm", big}}, "raw/hist.hgrm is 1001 bytes, over the 1000 bytes one file may hold"},
		{"a stdout over the per-file cap", [][2]string{{"stdout", big}}, "stdout is 1001 bytes"},
		{"files over the total cap", [][2]string{{"raw/a.json", half}, {"raw/b.json", half}}, "add up to more than 1500 bytes (at raw/b.json)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := JobResult{Files: map[string][]byte{"before": nil}}
			log := transferLog(t, append(append([][2]string{}, status...), tc.entries...))
			err := unpackTransferLimited(log, "/raw", nil, &res, lim)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %s", err, tc.want)
			}
			if len(res.Files) != 1 || res.Files["before"] != nil {
				t.Errorf("a refused transfer handed back files: %v", res.Files)
			}
		})
	}
	// The same caps let a transfer just under them through, subfolders included.
	var res JobResult
	log := transferLog(t, append(append([][2]string{}, status...), [2]string{"raw/a.json", half}, [2]string{"raw/sub/b.txt", "b"}))
	if err := unpackTransferLimited(log, "/raw", nil, &res, lim); err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 2 || len(res.Files["a.json"]) != 800 || string(res.Files["sub/b.txt"]) != "b" {
		t.Errorf("files: %d %v", len(res.Files), res.Files["sub/b.txt"])
	}
}

// TestCappedBuffer: a log longer than its cap stops the writer and says so.
func TestCappedBuffer(t *testing.T) {
	b := &cappedBuffer{max: 10}
	if _, err := b.Write([]byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write([]byte("x")); err == nil || !b.over {
		t.Fatalf("the 11th byte of a 10-byte cap: err %v, over %v", err, b.over)
	}
}
