package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-viper/mapstructure/v2"

	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/store"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

func TestConfigDefaults(t *testing.T) {
	var c store.Config
	if err := c.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	if !c.Embedded.On() || c.Embedded.Retention != 7*24*time.Hour || c.Embedded.RollupRetention != 35*24*time.Hour {
		t.Fatalf("defaults: %+v", c.Embedded)
	}
	c = store.Config{InfluxDB: &influx.Config{URL: "http://127.0.0.1:8086", Bucket: "vigil/autogen"}}
	if err := c.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	i := c.InfluxDB
	if i.BatchSize != 500 || i.FlushInterval != time.Second || i.SpoolMax != units.ByteSize(1<<30) || i.Timeout != 10*time.Second {
		t.Fatalf("influxdb defaults: %+v", i)
	}
}

func TestConfigErrors(t *testing.T) {
	off := false
	tests := []struct {
		name string
		c    store.Config
		want []string
		is   error
	}{
		{"short retention", store.Config{Embedded: store.EmbeddedConfig{Retention: time.Minute}},
			[]string{"embedded.retention: 1m0s: must be at least 1h"}, nil},
		{"rollups shorter than raw", store.Config{Embedded: store.EmbeddedConfig{Retention: 48 * time.Hour, RollupRetention: 24 * time.Hour}},
			[]string{"embedded.rollup_retention: 24h0m0s: must be at least retention (48h0m0s)"}, nil},
		{"nowhere to keep verdicts", store.Config{Embedded: store.EmbeddedConfig{Enabled: &off}},
			[]string{"embedded.enabled: false needs store.influxdb"}, nil},
		{"influx without url and bucket", store.Config{InfluxDB: &influx.Config{}},
			[]string{"influxdb.url: required", "influxdb.bucket: required"}, influx.ErrNoURL},
		{"influx bad values", store.Config{InfluxDB: &influx.Config{URL: "ftp://user:s3cret@host", Bucket: "b", BatchSize: -1, SpoolMax: 1024}},
			[]string{`influxdb.url: "ftp://host": want http(s)://host:port`, "influxdb.batch_size: -1: must be positive", "influxdb.spool_max: 1KiB: must be at least 1MiB"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.ValidateAndSetDefaults()
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if strings.Contains(msg, "s3cret") {
				t.Errorf("error leaks the password: %q", msg)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
		})
	}
}

// TestConfigDecodes decodes the store section the way the config loader
// does (mapstructure, text unmarshalers, unknown keys reported).
func TestConfigDecodes(t *testing.T) {
	in := map[string]any{
		"embedded": map[string]any{"enabled": false, "retention": "48h", "rollup_retention": "720h"},
		"influxdb": map[string]any{"url": "http://127.0.0.1:8086", "token": "u:p", "org": "", "bucket": "vigil/autogen",
			"batch_size": 1000, "flush_interval": "2s", "spool_max": "10MiB", "timeout": "5s"},
	}
	var c store.Config
	var md mapstructure.Metadata
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{Result: &c, Metadata: &md, WeaklyTypedInput: true,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(mapstructure.StringToTimeDurationHookFunc(), mapstructure.TextUnmarshallerHookFunc())})
	if err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(in); err != nil {
		t.Fatal(err)
	}
	if len(md.Unused) > 0 {
		t.Fatalf("keys not mapped to fields: %v", md.Unused)
	}
	if err := c.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	i := c.InfluxDB
	if c.Embedded.On() || c.Embedded.Retention != 48*time.Hour || c.Embedded.RollupRetention != 720*time.Hour ||
		i.BatchSize != 1000 || i.FlushInterval != 2*time.Second || i.SpoolMax != 10<<20 || i.Timeout != 5*time.Second || i.Token != "u:p" {
		t.Fatalf("decoded %+v / %+v", c.Embedded, *i)
	}
}
