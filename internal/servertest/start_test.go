package servertest

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

func TestStartServesHealthAndConfig(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ep := Start(t, name)
			if ep.Main == "" || ep.Metrics == "" {
				t.Fatalf("endpoints %+v: want main and metrics addresses", ep)
			}
			resp, err := http.Get("http://" + ep.Metrics + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("/healthz: %s", resp.Status)
			}
			resp, err = http.Get("http://" + ep.Metrics + "/config")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var doc struct {
				Protocol string `json:"protocol"`
				NumCPU   int    `json:"num_cpu"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
				t.Fatalf("/config: %v", err)
			}
			if doc.Protocol == "" || doc.NumCPU < 1 {
				t.Fatalf("/config = %+v, want protocol and num_cpu", doc)
			}
		})
	}
}
