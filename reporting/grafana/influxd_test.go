package grafana

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
)

// influxd is a real InfluxDB 1.8 with Flux enabled, started for one test.
type influxd struct {
	url string // http://127.0.0.1:port
}

// startInfluxd starts a real influxd (influxtest: free ports, Flux on,
// missing binary fails under CI=true) with the database "vigil".
func startInfluxd(t *testing.T) *influxd {
	t.Helper()
	srv := influxtest.Start(t)
	if _, err := srv.Query("", "CREATE DATABASE vigil"); err != nil {
		t.Fatalf("create database: %v", err)
	}
	return &influxd{url: srv.URL}
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
	types  []string   // their #datatype annotations (string, long, double, dateTime:RFC3339…)
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
		var header, types []string
		for _, rec := range recs {
			if len(rec) > 0 && strings.HasPrefix(rec[0], "#") {
				if rec[0] == "#datatype" {
					types = rec[1:]
				}
				continue
			}
			if header == nil {
				header = rec
				if len(rec) >= 1 && rec[0] == "error" {
					return nil, fmt.Errorf("flux error: %s", block)
				}
				if res.header == nil {
					res.header, res.types = rec[1:], types
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
