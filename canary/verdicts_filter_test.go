package canary

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestVerdictsFilterAndGzip: GET /api/v1/verdicts?check=&tier=&target=
// answers only the verdicts of a listed check or tier and a listed target,
// and is gzipped for a client that accepts it; without the parameters it
// answers every verdict, and uncompressed without Accept-Encoding: gzip.
// The store holds 1,200 verdicts (60 checks × 20 targets) of another
// canary's region, as a proxy's canary does.
func TestVerdictsFilterAndGzip(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := testConfig(t, map[string]string{"o1": "http://127.0.0.1:1"},
		CheckConfig{Name: "home", Targets: []string{"o1"}, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/"}})
	c, err := New(cfg, compile(t, cfg), Options{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-10 * time.Second)
	var vs []reporting.Verdict
	for i := range 60 {
		tier := reporting.TierShallow
		if i == 7 {
			tier = reporting.TierDeep
		}
		for j := range 20 {
			vs = append(vs, reporting.Verdict{Check: fmt.Sprintf("check-%02d", i), Target: fmt.Sprintf("origin-%02d", j), Tier: tier,
				Region: "eu-west", Vantage: "v2", State: reporting.StateHealthy, OK: true, StatusCode: 200,
				TTFB: 12 * time.Millisecond, Duration: 30 * time.Millisecond, At: at, Expires: at.Add(time.Hour)})
		}
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler(st))
	t.Cleanup(srv.Close)
	// No transparent decompression: the bytes as sent.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 10 * time.Second}
	get := func(query string, gz bool) (n int, encoding string, got []reporting.Verdict) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/verdicts?max_age=2m"+query, nil)
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("?%s: status %d: %s", query, resp.StatusCode, raw)
		}
		var body io.Reader = bytes.NewReader(raw)
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(body)
			if err != nil {
				t.Fatal(err)
			}
			body = zr
		}
		if err := json.NewDecoder(body).Decode(&got); err != nil {
			t.Fatalf("?%s: %v", query, err)
		}
		return len(raw), resp.Header.Get("Content-Encoding"), got
	}
	whole, enc, all := get("", false)
	if len(all) != 1200 || enc != "" {
		t.Fatalf("unfiltered: %d verdicts, Content-Encoding %q; want 1200, none", len(all), enc)
	}
	wholeGz, enc, all := get("", true)
	if len(all) != 1200 || enc != "gzip" {
		t.Fatalf("unfiltered with Accept-Encoding: gzip: %d verdicts, Content-Encoding %q; want 1200, gzip", len(all), enc)
	}
	pool, enc, got := get("&check=check-01,check-02&target=origin-03&target=origin-04", true)
	if len(got) != 4 || enc != "gzip" {
		t.Fatalf("filtered: %d verdicts, Content-Encoding %q; want 4 (2 checks × 2 targets), gzip", len(got), enc)
	}
	for _, v := range got {
		if (v.Check != "check-01" && v.Check != "check-02") || (v.Target != "origin-03" && v.Target != "origin-04") {
			t.Errorf("filtered answer holds %s/%s", v.Check, v.Target)
		}
	}
	// A tier counts as a pool's verdicts.tiers does: its checks, or the
	// listed ones.
	if _, _, got := get("&tier=deep&check=check-01&target=origin-00", false); len(got) != 2 {
		t.Errorf("tier=deep&check=check-01&target=origin-00: %d verdicts, want 2", len(got))
	}
	var targets []string
	for j := range 20 {
		targets = append(targets, fmt.Sprintf("origin-%02d", j))
	}
	pool20, _, got := get("&check=check-01&target="+strings.Join(targets, ","), true)
	if len(got) != 20 {
		t.Errorf("one check × 20 targets: %d verdicts, want 20", len(got))
	}
	// A tier no check can have is a 400 naming it, not an empty answer.
	resp, err := client.Get(srv.URL + "/api/v1/verdicts?tier=deep,nope")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), `tier: \"nope\" is not a tier: shallow, deep or synthetic`) {
		t.Errorf("?tier=deep,nope: %d %s; want 400 naming the tier", resp.StatusCode, raw)
	}
	t.Logf("bytes per poll: %d whole, %d whole gzipped, %d filtered to 4 verdicts and %d to 20, gzipped", whole, wholeGz, pool, pool20)
}
