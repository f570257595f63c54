package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
)

// TestDegradedSinceIsTheOutagesStart: the status page's "InfluxDB
// unreachable since T" (banner and Vigil-Degraded) dates the outage from
// the first failed operation on InfluxDB, the canary's writes, as
// /healthz's "writes failing since T" does, not from the first page read
// that failed.
func TestDegradedSinceIsTheOutagesStart(t *testing.T) {
	srv := influxtest.Start(t)
	db := srv.NewDatabase(t)
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	path := writeConfig(t, fmt.Sprintf(`
agent: {region: r1, data_dir: %q}
store:
  influxdb: {url: %q, bucket: %q, flush_interval: 100ms, timeout: 1s}
targets: [{name: o, url: %q}]
checks:
  - {name: up, targets: [o], interval: 1s, http: {path: /healthz}}
`, filepath.Join(dir, "data"), srv.URL, db, o.URL()))
	a, stop := startApp(t, path, roles{canary: true, page: true})
	defer stop()
	base := "http://" + a.Addr()
	waitFor(t, 15*time.Second, "/healthz 200 with InfluxDB up", func() bool {
		code, _ := do(t, "GET", base+"/healthz", "", nil)
		return code == 200
	})

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	writes := regexp.MustCompile(`store\.influxdb: writes failing since (\S+) `)
	var body string
	waitFor(t, 15*time.Second, "/healthz: writes failing", func() bool {
		_, body = do(t, "GET", base+"/healthz", "", nil)
		return writes.MatchString(body)
	})
	since := writes.FindStringSubmatch(body)[1]
	time.Sleep(1500 * time.Millisecond) // the page's first read is in a later second

	var mark string
	waitFor(t, 15*time.Second, "the degraded mark", func() bool {
		_, hdr, _ := getHeader(t, base+"/api/v1/verdicts")
		mark = hdr.Get(reporting.DegradedHeader)
		return mark != ""
	})
	// The outage starts at the first failed operation: the writes' or,
	// on a loaded machine, a read (the canary's own) that failed before
	// them; never the page's read, a second and a half later.
	_, body = do(t, "GET", base+"/healthz", "", nil)
	if m := regexp.MustCompile(`store\.influxdb: reads failing since (\S+):`).FindStringSubmatch(body); m != nil && m[1] < since {
		since = m[1]
	}
	want := "InfluxDB unreachable since " + since + ": showing this canary's own results only"
	if mark != want {
		t.Errorf("%s = %q\nwant %q (/healthz:\n%s)", reporting.DegradedHeader, mark, want, body)
	}
	if _, _, page := getHeader(t, base+"/"); !strings.Contains(page, ">InfluxDB unreachable since "+since+": ") {
		t.Errorf("GET /: no banner dated %s", since)
	}
}
