package grafana

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// An origin that no request went through in an interval (out of rotation,
// so its signal counts 0 requests and p95_ms 0) has no error rate and no
// p95 for that interval: the proxy panels show a gap (null), not 0 % errors
// and 0 ms, while an origin with requests still shows its rate and p95.
func TestProxyPanelsShowNoValueWithoutRequests(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now().Truncate(time.Minute)
	start := now.Add(-10 * time.Minute)
	var sb strings.Builder
	for i := 0; i < 6; i++ {
		at := start.Add(time.Duration(i)*time.Minute + 10*time.Second)
		// o1 serves 100 requests a minute, 5 of them 5xx, p95 80 ms.
		fmt.Fprintf(&sb, "vigil_signal,pool=web,origin=o1,region=eu-west,vantage=proxy-1 requests=100i,status_5xx=5i,conn_errors=0i,timeouts=0i,p95_ms=80,ejected=false,out=false %d\n", at.UnixNano())
		// o2 answers 503 to its 10 requests in the first minute and is
		// ejected: no request goes through it after that.
		if i == 0 {
			fmt.Fprintf(&sb, "vigil_signal,pool=web,origin=o2,region=eu-west,vantage=proxy-1 requests=10i,status_5xx=10i,conn_errors=0i,timeouts=0i,p95_ms=30,ejected=false,out=false %d\n", at.UnixNano())
		} else {
			fmt.Fprintf(&sb, "vigil_signal,pool=web,origin=o2,region=eu-west,vantage=proxy-1 requests=0i,status_5xx=0i,conn_errors=0i,timeouts=0i,p95_ms=0,ejected=true,out=true %d\n", at.UnixNano())
		}
		// o3 is out of rotation over the whole range.
		fmt.Fprintf(&sb, "vigil_signal,pool=web,origin=o3,region=eu-west,vantage=proxy-1 requests=0i,status_5xx=0i,conn_errors=0i,timeouts=0i,p95_ms=0,ejected=true,out=true %d\n", at.UnixNano())
	}
	db.write(t, sb.String())

	panel := func(title string) map[string][]string {
		t.Helper()
		var flux string
		for _, q := range Queries() {
			if q.Dashboard == DashboardProxy && q.Panel == title {
				flux = Interpolate(q.Flux, map[string][]string{"region": {AllValue}}, start, now, time.Minute)
			}
		}
		if flux == "" {
			t.Fatalf("no proxy panel %q", title)
		}
		res, err := db.query(flux)
		if err != nil {
			t.Fatalf("%s: %v\nquery:\n%s", title, err, flux)
		}
		oi, vi := slices.Index(res.header, "origin"), slices.Index(res.header, "_value")
		if oi < 0 || vi < 0 {
			t.Fatalf("%s: columns %v lack origin or _value", title, res.header)
		}
		// Values per origin in time order; "" is null.
		got := map[string][]string{}
		for _, row := range res.rows {
			got[row[oi]] = append(got[row[oi]], row[vi])
		}
		return got
	}
	// Every value of vals is null ("") except the first n, which are want.
	check := func(title, origin string, vals []string, n int, want string) {
		t.Helper()
		if len(vals) == 0 && n > 0 {
			t.Errorf("%s: origin %s: no values, want %s in its first interval", title, origin, want)
			return
		}
		for i, v := range vals {
			if i < n && v != want {
				t.Errorf("%s: origin %s: %v, want %s in interval %d", title, origin, vals, want, i+1)
				return
			}
			if i >= n && v != "" {
				t.Errorf("%s: origin %s: %v, want no value (null) from interval %d on: no request went through it", title, origin, vals, n+1)
				return
			}
		}
	}

	const errRate = "Error rate per origin (5xx + conn errors + timeouts)"
	got := panel(errRate)
	if v := got["o1"]; len(v) != 6 || slices.ContainsFunc(v, func(s string) bool { return s != "5" }) {
		t.Errorf("%s: origin o1: %v, want 5 (%%) in each of 6 intervals", errRate, v)
	}
	check(errRate, "o2", got["o2"], 1, "100")
	check(errRate, "o3", got["o3"], 0, "")

	const p95 = "Latency p95 per origin (worst proxy)"
	got = panel(p95)
	if v := got["o1"]; len(v) != 6 || slices.ContainsFunc(v, func(s string) bool { return s != "80" }) {
		t.Errorf("%s: origin o1: %v, want 80 (ms) in each of 6 intervals", p95, v)
	}
	check(p95, "o2", got["o2"], 1, "30")
	check(p95, "o3", got["o3"], 0, "")
}
