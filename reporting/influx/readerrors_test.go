package influx_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
)

// TestReadErrorsNameTheKey: every read of a real InfluxDB 1.8 that fails
// because of the setup (Flux off, its default; a wrong password; a
// retention policy that does not exist) returns an error that names what
// to change, whoever reads: the proxy's verdict poll (Verdicts), the
// passive triggers (Signals), the status page and alerter (History,
// Rollups). The error and /healthz's line (Health) are on one line:
// InfluxDB's message ends with a newline, which made an empty line in
// /healthz.
func TestReadErrorsNameTheKey(t *testing.T) {
	const fluxOff = `store.influxdb.url: that InfluxDB has Flux off, and vigil reads with Flux: ` +
		`set flux-enabled = true in the [http] section of influxdb.conf, or INFLUXDB_HTTP_FLUX_ENABLED=true, and restart InfluxDB ` +
		`(403 Forbidden: Flux query service disabled. Verify flux-enabled=true in the [http] section of the InfluxDB config.)`
	noFlux := influxtest.Start(t, influxtest.FluxOff())
	withAuth := influxtest.Start(t, influxtest.Auth("admin", "right-pass"))
	plain := influxtest.Start(t)
	for _, tc := range []struct {
		name string
		srv  *influxtest.Server
		cfg  influx.Config
		want string
	}{
		{"Flux off", noFlux, influx.Config{Bucket: "vigil/autogen"}, fluxOff},
		{"Flux off, with credentials", withAuthFluxOff(t), influx.Config{Token: "admin:right-pass", Bucket: "vigil/autogen"}, fluxOff},
		{"wrong password", withAuth, influx.Config{Token: "admin:wrong-pass", Bucket: "vigil/autogen"},
			`store.influxdb.token: rejected by InfluxDB (401 Unauthorized)`},
		{"no such retention policy", plain, influx.Config{Bucket: "vigil/nosuchrp"},
			`store.influxdb.bucket: "vigil/nosuchrp": not found in InfluxDB (500 Internal Server Error: failed to initialize execute state: invalid retention policy)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.srv.Query("", "CREATE DATABASE vigil"); err != nil {
				t.Fatal(err)
			}
			cfg := tc.cfg
			cfg.URL, cfg.Timeout = tc.srv.URL, 5*time.Second
			st, err := influx.Open(cfg, t.TempDir(), influx.Options{Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ctx := context.Background()
			q := reporting.HistoryQuery{From: time.Now().Add(-time.Hour)}
			reads := []struct {
				what string
				err  func() error
			}{
				{"verdicts", func() error { _, err := st.Verdicts(ctx, time.Minute); return err }},
				{"signals", func() error { _, err := st.Signals(ctx, time.Now().Add(-time.Minute)); return err }},
				{"history", func() error { _, err := st.History(ctx, q); return err }},
				{"rollups", func() error { _, err := st.Rollups(ctx, q); return err }},
			}
			for _, r := range reads {
				want := "influx: " + r.what + ": " + tc.want
				if err := r.err(); err == nil || err.Error() != want {
					t.Errorf("%s: error = %q\nwant %q", r.what, err, want)
				}
			}
			h := st.Health()
			if h == nil || h.Error() != "" && !strings.HasSuffix(h.Error(), ": "+tc.want) || strings.Contains(h.Error(), "\n") {
				t.Errorf("Health = %q; want one line ending with %q", h, tc.want)
			}
		})
	}
}

// withAuthFluxOff starts an influxd with both auth and Flux off.
func withAuthFluxOff(t *testing.T) *influxtest.Server {
	return influxtest.Start(t, influxtest.FluxOff(), influxtest.Auth("admin", "right-pass"))
}
