package canary

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// duplicateGauge returns vigil_duplicate_canaries by "region/vantage".
func duplicateGauge(t *testing.T, w *reporting.DuplicateWatch) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := w.Register(reg); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "vigil_duplicate_canaries" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out[l["region"]+"/"+l["vantage"]] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestDuplicateCanaries: two canaries writing into one embedded store with
// the same agent.region and agent.vantage (a copied config) are found: the
// store's readers log a warning naming the region, the vantage and both
// instances, vigil_duplicate_canaries says 2 for them, and
// GET /api/v1/verdicts marks the series (duplicate_instances). Two canaries
// of different regions, and one canary replacing another (a restart), are
// no duplicates: no warning, no gauge, no field.
func TestDuplicateCanaries(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	cases := []struct {
		name             string
		regionA, regionB string
		restart          bool // A stops before B starts
		dup              bool
	}{
		{name: "same region and vantage", regionA: "eu-west", regionB: "eu-west", dup: true},
		{name: "two regions", regionA: "eu-west", regionB: "us-east"},
		{name: "restart", regionA: "eu-west", regionB: "eu-west", restart: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs checktest.SyncBuffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			watch := reporting.NewDuplicateWatch(log)
			st, err := store.Open(t.TempDir(), store.Options{Log: log, Duplicates: watch})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			mk := func(region string) *Config {
				cfg := testConfig(t, map[string]string{"t1": o.URL()},
					CheckConfig{Name: "a", Targets: []string{"t1"}, Interval: 100 * time.Millisecond, Rise: 1,
						HTTP: &checks.HTTPSpec{Path: "/healthz"}})
				cfg.Agent.Region = region // vantage "v1" in both
				return cfg
			}
			run := func(region string) (*Canary, context.CancelFunc, chan error) {
				cfg := mk(region)
				c, err := New(cfg, compile(t, cfg), Options{Sink: st, Log: testLog(t), PublishEvery: 20 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- c.Run(ctx) }()
				return c, cancel, done
			}
			stop := func(cancel context.CancelFunc, done chan error) {
				cancel()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("Run did not return")
				}
			}
			// written waits until the store holds n verdicts of c's instance.
			written := func(c *Canary, n int) {
				waitFor(t, "verdicts of "+c.Instance(), func() bool {
					hist, err := st.History(context.Background(), reporting.HistoryQuery{Check: "a"})
					got := 0
					for _, v := range hist {
						if v.Instance == c.Instance() {
							got++
						}
					}
					return err == nil && got >= n
				})
			}
			a, cancelA, doneA := run(tc.regionA)
			written(a, 3)
			if tc.restart {
				stop(cancelA, doneA)
			}
			b, cancelB, doneB := run(tc.regionB)
			defer stop(cancelB, doneB)
			if !tc.restart {
				defer stop(cancelA, doneA)
			}
			if a.Instance() == b.Instance() || !strings.HasPrefix(a.Instance(), hostname(t)+"-") {
				t.Fatalf("instances %q and %q: want two, hostname-prefixed", a.Instance(), b.Instance())
			}
			written(b, 3)
			if !tc.restart {
				written(a, 6) // A wrote again while B writes
			}

			// The canary's API reads the store (as vigil run's does).
			srv := httptest.NewServer(b.Handler(st))
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/api/v1/verdicts?max_age=1m")
			if err != nil {
				t.Fatal(err)
			}
			var vs []map[string]any
			err = json.NewDecoder(resp.Body).Decode(&vs)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			marked := 0
			for _, v := range vs {
				if v["instance"] == nil || v["instance"] == "" {
					t.Errorf("verdict without instance: %v", v)
				}
				if d, ok := v["duplicate_instances"].([]any); ok {
					marked++
					if len(d) != 2 || !strings.Contains(strings.Join([]string{d[0].(string), d[1].(string)}, ","), a.Instance()) ||
						!strings.Contains(d[0].(string)+","+d[1].(string), b.Instance()) {
						t.Errorf("duplicate_instances %v: want %s and %s", d, a.Instance(), b.Instance())
					}
				}
			}
			out := logs.String()
			gauge := duplicateGauge(t, watch)
			if !tc.dup {
				if marked > 0 || strings.Contains(out, "duplicate canaries") || len(gauge) > 0 {
					t.Fatalf("no duplicates expected: %d marked verdicts, gauge %v, log:\n%s", marked, gauge, out)
				}
				return
			}
			if marked != 1 {
				t.Errorf("%d verdicts marked with duplicate_instances, want 1: %v", marked, vs)
			}
			for _, want := range []string{"level=WARN", "duplicate canaries", "region=eu-west", "vantage=v1",
				a.Instance(), b.Instance(), "agent.vantage or agent.region"} {
				if !strings.Contains(out, want) {
					t.Errorf("log lacks %q:\n%s", want, out)
				}
			}
			if gauge["eu-west/v1"] != 2 {
				t.Errorf("vigil_duplicate_canaries = %v, want eu-west/v1 = 2", gauge)
			}
			// Rate-limited: reading again logs nothing new.
			n := strings.Count(out, "duplicate canaries")
			if _, err := st.Verdicts(context.Background(), time.Minute); err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(logs.String(), "duplicate canaries"); got != n {
				t.Errorf("a second read logged again (%d lines, was %d)", got, n)
			}
		})
	}
}

func hostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "canary"
	}
	return h
}
