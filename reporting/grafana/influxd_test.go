package grafana

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// influxd is a real InfluxDB 1.8 with Flux enabled, started for one test.
type influxd struct {
	url string // http://127.0.0.1:port
}

// influxdBinary finds influxd: $VIGIL_INFLUXD, <module root>/.cache/bin/influxd, then PATH.
func influxdBinary() (string, error) {
	if p := os.Getenv("VIGIL_INFLUXD"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("VIGIL_INFLUXD: %w", err)
		}
		return p, nil
	}
	if root, err := moduleRoot(); err == nil {
		p := filepath.Join(root, ".cache", "bin", "influxd")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return exec.LookPath("influxd")
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found")
		}
		dir = parent
	}
}

// freePort returns a 127.0.0.1 port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startInfluxd starts influxd on free ports with its data under
// t.TempDir(), waits for /ping, creates database "vigil" and stops the
// process on cleanup.
func startInfluxd(t *testing.T) *influxd {
	t.Helper()
	bin, err := influxdBinary()
	checktest.NeedDependency(t, "influxd", err)
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port can be taken between probe and bind
		db, err := tryInfluxd(t, bin)
		if err == nil {
			return db
		}
		lastErr = err
	}
	t.Fatalf("influxd did not start: %v", lastErr)
	return nil
}

func tryInfluxd(t *testing.T, bin string) (*influxd, error) {
	dir := t.TempDir()
	httpPort, rpcPort := freePort(t), freePort(t)
	conf := fmt.Sprintf(`reporting-disabled = true
bind-address = "127.0.0.1:%d"
[meta]
  dir = %q
[data]
  dir = %q
  wal-dir = %q
  query-log-enabled = false
[http]
  bind-address = "127.0.0.1:%d"
  flux-enabled = true
  log-enabled = false
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
`, rpcPort, filepath.Join(dir, "meta"), filepath.Join(dir, "data"), filepath.Join(dir, "wal"), httpPort)
	confPath := filepath.Join(dir, "influxd.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "influxd.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-config", confPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
		logf.Close()
	}
	db := &influxd{url: fmt.Sprintf("http://127.0.0.1:%d", httpPort)}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			stop()
			log, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("influxd exited: %v\n%s", err, tail(log, 2000))
		default:
		}
		resp, err := http.Get(db.url + "/ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusNoContent {
				break
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("no /ping answer from %s after 30s", db.url)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(stop)
	resp, err := http.PostForm(db.url+"/query", url.Values{"q": {"CREATE DATABASE vigil"}})
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("create database: %s: %s", resp.Status, body)
	}
	return db, nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// write posts line protocol (ns precision) into database vigil.
func (db *influxd) write(t *testing.T, lines string) {
	t.Helper()
	resp, err := http.Post(db.url+"/write?db=vigil&precision=ns", "text/plain", strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("write: %s: %s", resp.Status, body)
	}
}

// fluxTable is a query result: the header and data rows of every table.
type fluxResult struct {
	header []string   // columns of the first table
	rows   [][]string // data rows of all tables, without the leading annotation column
}

// query runs Flux through the 1.8 compatibility endpoint (no org, no
// token) and parses the annotated CSV answer.
func (db *influxd) query(flux string) (*fluxResult, error) {
	req, err := http.NewRequest(http.MethodPost, db.url+"/api/v2/query", strings.NewReader(flux))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/vnd.flux")
	req.Header.Set("Accept", "application/csv")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, body)
	}
	return parseFluxCSV(body)
}

// parseFluxCSV reads InfluxDB's annotated CSV: blocks separated by blank
// lines, each with #annotations, a header row and data rows. A block whose
// header is "error,reference" is a query error.
func parseFluxCSV(body []byte) (*fluxResult, error) {
	res := &fluxResult{}
	for _, block := range bytes.Split(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")), []byte("\n\n")) {
		if len(bytes.TrimSpace(block)) == 0 {
			continue
		}
		r := csv.NewReader(bytes.NewReader(block))
		r.FieldsPerRecord = -1
		recs, err := r.ReadAll()
		if err != nil {
			return nil, fmt.Errorf("csv: %w", err)
		}
		var header []string
		for _, rec := range recs {
			if len(rec) > 0 && strings.HasPrefix(rec[0], "#") {
				continue
			}
			if header == nil {
				header = rec
				if len(rec) >= 1 && rec[0] == "error" {
					return nil, fmt.Errorf("flux error: %s", block)
				}
				if res.header == nil {
					res.header = rec[1:]
				}
				continue
			}
			if len(rec) >= 2 && header[0] == "error" {
				return nil, fmt.Errorf("flux error: %s", strings.Join(rec, ","))
			}
			res.rows = append(res.rows, rec[1:])
		}
	}
	return res, nil
}
