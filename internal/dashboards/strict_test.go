package dashboards

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	sdk "github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// strictDecode decodes a rendered dashboard with the Grafana foundation SDK's strict decoder
// (pinned v0.0.12), every panel and datasource plugin registered, so that a field Grafana's schema
// does not know or a value of the wrong type fails. The one exemption: the SDK's AnnotationQuery
// has no room for the options Grafana's Prometheus datasource reads from a Prometheus annotation
// (titleFormat, tagKeys, textFormat, useValueForTime), so exactly those keys are removed from
// Prometheus annotations first; everything else in them, the query target included, is strict.
func strictDecode(b []byte) (*sdk.Dashboard, error) {
	plugins.RegisterDefaultPlugins()
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	if anns, ok := raw["annotations"].(map[string]any); ok {
		list, _ := anns["list"].([]any)
		for _, a := range list {
			a, _ := a.(map[string]any)
			if ds, _ := a["datasource"].(map[string]any); ds["type"] == "prometheus" {
				for _, k := range prometheusAnnotationKeys {
					delete(a, k)
				}
			}
		}
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var d sdk.Dashboard
	if err := d.UnmarshalJSONStrict(b); err != nil {
		return nil, err
	}
	return &d, nil
}

func TestDashboardsDecodeStrictly(t *testing.T) {
	for _, d := range All() {
		b, err := Render(d)
		if err != nil {
			t.Fatal(err)
		}
		back, err := strictDecode(b)
		if err != nil {
			t.Errorf("%s: strict decode: %v", d.UID, err)
			continue
		}
		if int(back.SchemaVersion) != SchemaVersion {
			t.Errorf("%s: schemaVersion decoded as %d, want %d", d.UID, back.SchemaVersion, SchemaVersion)
		}
		if len(back.Panels) != len(d.Panels) {
			t.Errorf("%s: %d panels decoded, %d rendered", d.UID, len(back.Panels), len(d.Panels))
		}
	}
}

// TestStrictDecodeRejectsUnknownFields proves the check above can fail: one unknown key anywhere a
// panel, its options, its field config, its query or an annotation's query has one is an error.
func TestStrictDecodeRejectsUnknownFields(t *testing.T) {
	b, err := Render(Overview())
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	cases := map[string][2]string{
		"panel":        {`"gridPos": {`, `"bogus": 1, "gridPos": {`},
		"query":        {`"editorMode": "code",`, `"editorMode": "code", "bogus": 1,`},
		"field custom": {`"drawStyle": "line",`, `"drawStyle": "line", "bogus": 1,`},
		"table option": {`"showHeader": true`, `"showHeader": true, "bogus": 1`},
		"wrong type":   {`"schemaVersion": 41`, `"schemaVersion": "41"`},
		"annotation":   {`"name": "Steps",`, `"name": "Steps", "step": "1s",`},
	}
	for name, c := range cases {
		if !strings.Contains(s, c[0]) {
			t.Errorf("%s: %q not in the rendered dashboard", name, c[0])
			continue
		}
		if _, err := strictDecode([]byte(strings.Replace(s, c[0], c[1], 1))); err == nil {
			t.Errorf("%s: an unknown or mistyped field decoded without error", name)
		}
	}
}
