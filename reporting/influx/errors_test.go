package influx_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
)

// logTo returns a logger writing its lines to b.
func logTo(b *checktest.SyncBuffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// waitHealth waits up to 10 s for Health to report every one of want.
// failingStore opens a store with cfg (flushing every 20ms, retrying after
// 50ms) against a server that answers every request with status and the
// text answer gives (as contentType), publishes one verdict and reads once.
// It returns the store (closed when the test ends), its log and the read's
// error.
func failingStore(t *testing.T, cfg influx.Config, status int, contentType string, answer func(*http.Request) string) (*influx.Store, *checktest.SyncBuffer, error) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, answer(r))
	}))
	t.Cleanup(srv.Close)
	log := &checktest.SyncBuffer{}
	cfg.URL, cfg.FlushInterval = srv.URL, 20*time.Millisecond
	st, err := influx.Open(cfg, t.TempDir(), influx.Options{Log: logTo(log), MinBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Publish(context.Background(), []reporting.Verdict{outageVerdict(time.Now(), 0)}); err != nil {
		t.Fatal(err)
	}
	_, rerr := st.Verdicts(context.Background(), time.Minute)
	return st, log, rerr
}

func waitHealth(t *testing.T, st *influx.Store, want ...string) string {
	t.Helper()
	var got string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got = ""
		if err := st.Health(); err != nil {
			got = err.Error()
		}
		all := true
		for _, w := range want {
			all = all && strings.Contains(got, w)
		}
		if all {
			return got
		}
	}
	t.Fatalf("Health = %q; want it to contain %q", got, want)
	return ""
}

// waitLog returns log's text once it holds want, or after 10 s.
func waitLog(log *checktest.SyncBuffer, want string) string {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if l := log.String(); strings.Contains(l, want) || time.Now().After(deadline) {
			return l
		}
	}
}

// TestErrorsNameTheKey: when InfluxDB rejects the token or has no such
// bucket, /healthz's lines (Health), the write log and read errors name the
// store.influxdb key to fix (and the bucket as configured), not only
// InfluxDB's status.
func TestErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"token rejected (2.x)", `{"code":"unauthorized","message":"unauthorized access"}`, http.StatusUnauthorized,
			"store.influxdb.token: rejected by InfluxDB (401 Unauthorized: unauthorized access)"},
		{"token without the permission (2.x)", `{"code":"forbidden","message":"insufficient permissions for write"}`, http.StatusForbidden,
			"store.influxdb.token: rejected by InfluxDB (403 Forbidden: insufficient permissions for write)"},
		{"no such organization (2.x)", `{"code":"not found","message":"organization name \"acme\" not found"}`, http.StatusNotFound,
			`store.influxdb.org: "acme": not found in InfluxDB (404 Not Found: organization name "acme" not found)`},
		{"no such bucket (2.x)", `{"code":"not found","message":"bucket \"vigil\" not found"}`, http.StatusNotFound,
			`store.influxdb.bucket: "vigil": not found in InfluxDB (404 Not Found: bucket "vigil" not found)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, log, rerr := failingStore(t, influx.Config{Token: "s3cret-token", Org: "acme", Bucket: "vigil"},
				tc.status, "application/json", func(*http.Request) string { return tc.body })
			if rerr == nil || rerr.Error() != "influx: verdicts: "+tc.want {
				t.Errorf("read error = %v, want %q", rerr, "influx: verdicts: "+tc.want)
			}
			h := waitHealth(t, st, "writes failing since", "reads failing since")
			for _, line := range strings.Split(h, "\n") {
				if !strings.HasSuffix(line, ": "+tc.want) {
					t.Errorf("Health line %q does not end with %q", line, tc.want)
				}
			}
			if l := waitLog(log, `err="`+strings.ReplaceAll(tc.want, `"`, `\"`)+`"`); !strings.Contains(l, `err="`+strings.ReplaceAll(tc.want, `"`, `\"`)+`"`) || strings.Contains(l, "s3cret-token") {
				t.Errorf("write failure log does not say %q (or shows the token):\n%s", tc.want, l)
			}
		})
	}

	t.Run("no such database (1.8)", func(t *testing.T) {
		srv := influxtest.Start(t)
		var log checktest.SyncBuffer
		st, err := influx.Open(influx.Config{URL: srv.URL, Bucket: "nodb/autogen", FlushInterval: 20 * time.Millisecond},
			t.TempDir(), influx.Options{Log: logTo(&log), MinBackoff: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := st.Publish(context.Background(), []reporting.Verdict{outageVerdict(time.Now(), 0)}); err != nil {
			t.Fatal(err)
		}
		_, rerr := st.Verdicts(context.Background(), time.Minute)
		const wantRead = `store.influxdb.bucket: "nodb/autogen": not found in InfluxDB (500 Internal Server Error: failed to initialize execute state: no database)`
		const wantWrite = `store.influxdb.bucket: "nodb/autogen": not found in InfluxDB (404 Not Found: database not found: "nodb")`
		if rerr == nil || rerr.Error() != "influx: verdicts: "+wantRead {
			t.Errorf("read error = %v, want %q", rerr, "influx: verdicts: "+wantRead)
		}
		h := waitHealth(t, st, "writes failing since", "reads failing since")
		for _, line := range strings.Split(h, "\n") {
			want := wantWrite
			if strings.HasPrefix(line, "reads") {
				want = wantRead
			}
			if !strings.HasSuffix(line, ": "+want) {
				t.Errorf("Health line %q does not end with %q", line, want)
			}
		}
		// The log line follows the health state's change: on a loaded
		// machine, a moment later.
		if l := waitLog(&log, strings.ReplaceAll(wantWrite, `"`, `\"`)); !strings.Contains(l, strings.ReplaceAll(wantWrite, `"`, `\"`)) {
			t.Errorf("write failure log does not say %q:\n%s", wantWrite, l)
		}
	})
}

// TestRetryWaitCapped: the wait before a write is retried is never more
// than MaxBackoff (30 s by default), jitter and Retry-After included: the
// cap applies after them.
func TestRetryWaitCapped(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		want       string
	}{
		{"503 at the cap, +20 % jitter", http.StatusServiceUnavailable, "", "retry_in=200ms"},
		{"429 with a longer Retry-After", http.StatusTooManyRequests, "1", "retry_in=200ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			var log checktest.SyncBuffer
			o := influx.Options{Log: logTo(&log), MinBackoff: 200 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
			influx.PinJitter(&o, 0.999)
			st := openStore(t, srv.URL, "db/rp", t.TempDir(), o)
			if err := st.Publish(context.Background(), []reporting.Verdict{outageVerdict(time.Now(), 0)}); err != nil {
				t.Fatal(err)
			}
			re := regexp.MustCompile(`retry_in=\S+`)
			var got string
			for deadline := time.Now().Add(10 * time.Second); got == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				got = re.FindString(log.String())
			}
			if got != tc.want {
				t.Errorf("write failure logged %q, want %q (MaxBackoff 200ms)\n%s", got, tc.want, log.String())
			}
		})
	}
}
