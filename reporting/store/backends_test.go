package store_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

func TestOpenBackends(t *testing.T) {
	off := false
	tests := []struct {
		name      string
		cfg       store.Config
		sinks     []string
		influxSrc bool
		files     []string
	}{
		{"embedded only", store.Config{}, []string{"embedded"}, false, []string{store.FileName}},
		{"both", store.Config{InfluxDB: &influx.Config{URL: "http://127.0.0.1:1", Bucket: "vigil/autogen"}},
			[]string{"embedded", "influxdb"}, true, []string{store.FileName, influx.OutboxDir}},
		{"influx only", store.Config{Embedded: store.EmbeddedConfig{Enabled: &off}, InfluxDB: &influx.Config{URL: "http://127.0.0.1:1", Bucket: "vigil/autogen"}},
			[]string{"influxdb"}, true, []string{influx.OutboxDir}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.ValidateAndSetDefaults(); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			b, err := store.OpenBackends(tc.cfg, dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range b.Sinks() {
				names = append(names, s.Name)
			}
			if len(names) != len(tc.sinks) || (len(names) > 0 && names[0] != tc.sinks[0]) || names[len(names)-1] != tc.sinks[len(tc.sinks)-1] {
				t.Fatalf("sinks %v, want %v", names, tc.sinks)
			}
			if _, isInflux := b.Source().(*influx.Store); isInflux != tc.influxSrc {
				t.Fatalf("Source() is %T", b.Source())
			}
			for _, f := range tc.files {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
