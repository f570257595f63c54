package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
)

// TestInfluxOutageFallsBackToOwnResults: a canary whose store is InfluxDB
// serves its status page and API from InfluxDB (every region) while it is
// up; once influxd is stopped they keep answering 200 from this canary's own
// results (the embedded store; its memory when that is off), marked with a
// banner and a Vigil-Degraded header; when influxd is back they read it
// again and the marks go.
func TestInfluxOutageFallsBackToOwnResults(t *testing.T) {
	srv := influxtest.Start(t)
	db := srv.NewDatabase(t)
	o := checktest.NewOrigin()
	defer o.Close()

	// Another region's verdict, which only InfluxDB has.
	other, err := influx.Open(influx.Config{URL: srv.URL, Bucket: db, FlushInterval: 50 * time.Millisecond, Timeout: 5 * time.Second},
		t.TempDir(), influx.Options{Log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	err = other.Publish(context.Background(), []reporting.Verdict{{Check: "up", Target: "o", Region: "r2", Vantage: "r2-1",
		State: reporting.StateHealthy, OK: true, StatusCode: 200, Interval: time.Second, At: now, Expires: now.Add(time.Hour)}})
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = other.Flush(ctx)
		cancel()
	}
	other.Close()
	if err != nil {
		t.Fatalf("writing region r2's verdict: %v", err)
	}

	type agent struct {
		name, base string
		history    bool // has its own history (the embedded store)
	}
	var agents []agent
	for _, c := range []struct {
		name, embedded string
		history        bool
	}{
		{"embedded store", "", true},
		{"memory only", "\n  embedded: {enabled: false}", false},
	} {
		dir := t.TempDir()
		path := writeConfig(t, fmt.Sprintf(`
agent: {region: r1, data_dir: %q}
store:%s
  influxdb: {url: %q, bucket: %q, flush_interval: 100ms, timeout: 1s}
targets: [{name: o, url: %q}]
checks:
  - {name: up, targets: [o], interval: 1s, http: {path: /healthz}}
`, filepath.Join(dir, "data"), c.embedded, srv.URL, db, o.URL()))
		a, stop := startApp(t, path, roles{canary: true, page: true})
		defer stop()
		agents = append(agents, agent{c.name, "http://" + a.Addr(), c.history})
	}

	const banner = `role="status">InfluxDB unreachable since `
	const tail = `: showing this canary&#39;s own results only</div>`
	for _, ag := range agents {
		var regions []string
		waitFor(t, 20*time.Second, ag.name+": /api/v1/verdicts with regions r1 and r2 from InfluxDB", func() bool {
			code, hdr, body := getHeader(t, ag.base+"/api/v1/verdicts")
			regions = verdictRegions(t, body)
			return code == 200 && hdr.Get(reporting.DegradedHeader) == "" && slices.Equal(regions, []string{"r1", "r2"})
		})
		if code, hdr, body := getHeader(t, ag.base+"/"); code != 200 || hdr.Get(reporting.DegradedHeader) != "" || strings.Contains(body, banner) {
			t.Fatalf("%s: GET / with InfluxDB up = %d, %s %q, banner shown: %v; want 200, no mark",
				ag.name, code, reporting.DegradedHeader, hdr.Get(reporting.DegradedHeader), strings.Contains(body, banner))
		}
	}

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, ag := range agents {
		// The own results are there within a run or two (a busy machine
		// can hold the embedded store's first write back for a moment).
		var code int
		var hdr http.Header
		var body string
		ok := false
		for deadline := time.Now().Add(10 * time.Second); !ok && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			code, hdr, body = getHeader(t, ag.base+"/api/v1/verdicts")
			mark := hdr.Get(reporting.DegradedHeader)
			ok = code == 200 && strings.HasPrefix(mark, "InfluxDB unreachable since ") &&
				strings.HasSuffix(mark, ": showing this canary's own results only") && slices.Equal(verdictRegions(t, body), []string{"r1"})
		}
		if !ok {
			t.Fatalf("%s: /api/v1/verdicts with InfluxDB down = %d, %s %q, regions %v; want 200, the mark, r1 only\n%s",
				ag.name, code, reporting.DegradedHeader, hdr.Get(reporting.DegradedHeader), verdictRegions(t, body), body)
		}
		code, hdr, body = getHeader(t, ag.base+"/")
		if code != 200 || !strings.Contains(body, banner) || !strings.Contains(body, tail) || hdr.Get(reporting.DegradedHeader) == "" {
			t.Fatalf("%s: GET / with InfluxDB down = %d, %s %q; want 200 with the banner\n%s",
				ag.name, code, reporting.DegradedHeader, hdr.Get(reporting.DegradedHeader), body)
		}
		if !ag.history {
			continue
		}
		if code, _, body := getHeader(t, ag.base+"/check/up"); code != 200 || !strings.Contains(body, banner) {
			t.Fatalf("%s: GET /check/up with InfluxDB down = %d; want 200 with the banner\n%s", ag.name, code, body)
		}
		code, hdr, body = getHeader(t, ag.base+"/api/v1/checks/up/history?from=10m")
		if regions := verdictRegions(t, body); code != 200 || len(regions) == 0 || hdr.Get(reporting.DegradedHeader) == "" {
			t.Fatalf("%s: history with InfluxDB down = %d, %s %q; want 200, r1's runs, the mark\n%s",
				ag.name, code, reporting.DegradedHeader, hdr.Get(reporting.DegradedHeader), body)
		}
	}

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	for _, ag := range agents {
		waitFor(t, 40*time.Second, ag.name+": /api/v1/verdicts from InfluxDB again (r1 and r2, no mark)", func() bool {
			code, hdr, body := getHeader(t, ag.base+"/api/v1/verdicts")
			return code == 200 && hdr.Get(reporting.DegradedHeader) == "" && slices.Equal(verdictRegions(t, body), []string{"r1", "r2"})
		})
		if code, _, body := getHeader(t, ag.base+"/"); code != 200 || strings.Contains(body, banner) {
			t.Errorf("%s: GET / after InfluxDB returned = %d, banner shown: %v", ag.name, code, strings.Contains(body, banner))
		}
	}
}

// getHeader answers a GET with its status, header and body (at most 4 MiB).
func getHeader(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	c := &http.Client{Timeout: 15 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, resp.Header, string(b)
}

// verdictRegions lists the distinct regions of a JSON verdict list, sorted;
// nil when body is not one.
func verdictRegions(t *testing.T, body string) []string {
	t.Helper()
	var vs []struct {
		Region string `json:"region"`
	}
	if json.Unmarshal([]byte(body), &vs) != nil {
		return nil
	}
	var out []string
	for _, v := range vs {
		if !slices.Contains(out, v.Region) {
			out = append(out, v.Region)
		}
	}
	slices.Sort(out)
	return out
}
