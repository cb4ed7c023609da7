package dashboards

import (
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	sdk "github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// TestDashboardsDecodeStrictly decodes every dashboard with the Grafana foundation SDK's strict
// decoder (pinned v0.0.12), with every panel and datasource plugin registered, so that a field
// Grafana's schema does not know, or a value of the wrong type, fails here instead of being
// dropped silently when Grafana loads the JSON.
func TestDashboardsDecodeStrictly(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	for _, d := range All() {
		b, err := Render(d)
		if err != nil {
			t.Fatal(err)
		}
		var back sdk.Dashboard
		if err := back.UnmarshalJSONStrict(b); err != nil {
			t.Errorf("%s: strict decode: %v", d.UID, err)
			continue
		}
		if int(back.SchemaVersion) != SchemaVersion {
			t.Errorf("%s: schemaVersion decoded as %d, want %d", d.UID, back.SchemaVersion, SchemaVersion)
		}
	}
}
