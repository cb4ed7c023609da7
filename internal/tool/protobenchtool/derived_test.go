package protobenchtool

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/targets"
)

// TestDerivedListsCoverTheRegistry: every protocol of the target registry has a driver, and each
// list derived from the drivers (`protobench load`'s help, the generator's churn and gzip
// capabilities) names it or the driver says why not. The lists were typed by hand and went
// stale (the help left out connect://); a protocol added to the registry without a driver, or a
// driver whose abilities disagree with the adapter's, fails here.
func TestDerivedListsCoverTheRegistry(t *testing.T) {
	var help bytes.Buffer
	fs, _ := loadgen.NewFlagSet(&help)
	fs.PrintDefaults()
	caps := Adapter{}.Capabilities()
	for _, p := range targets.Protocols {
		d, ok := loadgen.Lookup(p)
		if !ok {
			if p == targets.ZMQ {
				t.Logf("%s: no driver in this build (the ZeroMQ driver needs cgo and libzmq)", p)
				continue
			}
			t.Errorf("protocol %s has no load generator driver", p)
			continue
		}
		info := d.Info()
		if !strings.Contains(help.String(), p+"://host:port") {
			t.Errorf("%s: --target's help does not name %s://host:port", p, p)
		}
		for _, m := range info.Methods {
			if !strings.Contains(help.String(), m) {
				t.Errorf("%s: --method's help does not name the driver's method %s", p, m)
			}
		}
		if !slices.Contains(caps.Protocols, p) {
			t.Errorf("%s: the generator's capabilities leave the protocol out", p)
		}
		_, churns := d.(loadgen.Churner)
		if churns != slices.Contains(caps.Churn, p) || churns != slices.Contains(loadgen.ChurnSchemes(), p) {
			t.Errorf("%s: churns %v, but the capabilities' churn list is %v", p, churns, caps.Churn)
		}
		if !churns && info.NoChurn == "" {
			t.Errorf("%s: the driver cannot churn and does not say why (DriverInfo.NoChurn)", p)
		}
		if info.Gzip != slices.Contains(caps.Gzip, p) || info.Gzip != slices.Contains(loadgen.GzipSchemes(), p) {
			t.Errorf("%s: gzip %v, but the capabilities' gzip list is %v", p, info.Gzip, caps.Gzip)
		}
		if (info.NoTLS == "") != slices.Contains(loadgen.TLSSchemes(), p) {
			t.Errorf("%s: TLS list %v disagrees with the driver's NoTLS %q", p, loadgen.TLSSchemes(), info.NoTLS)
		}
	}
	for _, s := range loadgen.Schemes() {
		if !slices.Contains(targets.Protocols, s) {
			t.Errorf("driver %s:// serves no protocol of the target registry (targets.Protocols)", s)
		}
	}
}
