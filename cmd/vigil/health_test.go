package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
)

// TestHealthzReportsInfluxOutage: while InfluxDB is down, /healthz answers
// 503 and says that writes (points waiting in the outbox) and reads fail,
// and since when; once InfluxDB is back it answers 200 again.
func TestHealthzReportsInfluxOutage(t *testing.T) {
	srv := influxtest.Start(t)
	db := srv.NewDatabase(t)
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "vigil.yaml")
	os.WriteFile(path, []byte(fmt.Sprintf(`
agent: {region: r1, data_dir: %q}
store:
  influxdb: {url: %q, bucket: %q, flush_interval: 100ms, timeout: 1s}
targets: [{name: o, url: %q}]
checks:
  - {name: up, targets: [o], interval: 1s, http: {path: /healthz}}
`, filepath.Join(dir, "data"), srv.URL, db, o.URL())), 0o600)
	a, stop := startApp(t, path, roles{canary: true, page: true})
	defer stop()
	base := "http://" + a.Addr()

	health := func() (int, string) {
		readPage(base) // the status page reads the store, so read failures show too
		return do(t, "GET", base+"/healthz", "", nil)
	}
	waitFor(t, 15*time.Second, "/healthz 200 with InfluxDB up", func() bool {
		code, _ := health()
		return code == 200
	})

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	var body string
	waitFor(t, 15*time.Second, "/healthz 503 naming the failing InfluxDB writes and reads", func() bool {
		var code int
		code, body = health()
		return code == 503 && strings.Contains(body, "store.influxdb: writes failing since") &&
			strings.Contains(body, "points waiting in the outbox") && strings.Contains(body, "store.influxdb: reads failing since")
	})
	t.Logf("/healthz during the outage:\n%s", body)

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 40*time.Second, "/healthz 200 after InfluxDB returned", func() bool {
		code, _ := health()
		return code == 200
	})
}

func readPage(base string) {
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), time.Second)
	if err != nil {
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	b := make([]byte, 4096)
	for {
		if _, err := c.Read(b); err != nil {
			return
		}
	}
}
