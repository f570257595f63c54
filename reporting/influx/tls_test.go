package influx_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
	"github.com/vigil-synthetics/vigil/reporting/tlsclient"
	"github.com/vigil-synthetics/vigil/reporting/tlsclient/tlstest"
)

// startInfluxdTLS runs the real influxd (1.8) serving its HTTP API over
// https on a free 127.0.0.1 port with a certificate of ca, and creates
// database "vigil". It returns the https base URL.
func startInfluxdTLS(t *testing.T, ca *tlstest.CA) string {
	t.Helper()
	bin, err := influxtest.Find()
	checktest.NeedDependency(t, "influxd (InfluxDB 1.8.10)", err)
	dir := t.TempDir()
	ports := make([]int, 2)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	conf := filepath.Join(dir, "influxdb.conf")
	cfg := fmt.Sprintf(`reporting-disabled = true
bind-address = "127.0.0.1:%d"
[meta]
  dir = %q
[data]
  dir = %q
  wal-dir = %q
  query-log-enabled = false
[monitor]
  store-enabled = false
[http]
  enabled = true
  bind-address = "127.0.0.1:%d"
  flux-enabled = true
  log-enabled = false
  https-enabled = true
  https-certificate = %q
  https-private-key = %q
[logging]
  level = "warn"
`, ports[0], filepath.Join(dir, "meta"), filepath.Join(dir, "data"), filepath.Join(dir, "wal"), ports[1],
		ca.ServerCertFile, ca.ServerKeyFile)
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd := exec.Command(bin, "run", "-config", conf)
	cmd.Env = append(os.Environ(), "INFLUXDB_REPORTING_DISABLED=true")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	base := fmt.Sprintf("https://127.0.0.1:%d", ports[1])
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("influxd exited at start:\n%s", out.String())
		default:
		}
		resp, err := client.Post(base+"/query?"+url.Values{"q": {"CREATE DATABASE vigil"}}.Encode(), "", nil)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("influxd did not answer over https within 30s (last: %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTLSCAFile: an InfluxDB whose certificate a private CA signed is
// refused with the unknown-authority error against the system pool, and
// read and written with store.influxdb.tls.ca_file naming that CA.
func TestTLSCAFile(t *testing.T) {
	ca := tlstest.New(t)
	base := startInfluxdTLS(t, ca)
	open := func(tc tlsclient.Config) *influx.Store {
		st, err := influx.Open(influx.Config{URL: base, Bucket: "vigil/autogen", FlushInterval: 50 * time.Millisecond,
			Timeout: 5 * time.Second, TLS: tc}, t.TempDir(), influx.Options{MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	v := reporting.Verdict{Check: "tls", Target: "t", Region: "r", Vantage: "v", State: reporting.StateHealthy, OK: true,
		At: now, Expires: now.Add(time.Minute), Interval: 30 * time.Second}

	t.Run("system pool", func(t *testing.T) {
		st := open(tlsclient.Config{})
		_, err := st.Verdicts(ctx, time.Hour)
		if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
			t.Fatalf("read without ca_file: err = %v, want the unknown-authority error", err)
		}
		if err := st.Publish(ctx, []reporting.Verdict{v}); err != nil {
			t.Fatal(err)
		}
		fctx, fcancel := context.WithTimeout(ctx, time.Second)
		defer fcancel()
		if err := st.Flush(fctx); err == nil {
			t.Fatal("write without ca_file delivered")
		}
		if err := st.Health(); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
			t.Fatalf("Health without ca_file = %v, want the unknown-authority error", err)
		}
	})
	t.Run("ca_file", func(t *testing.T) {
		st := open(tlsclient.Config{CAFile: ca.CAFile})
		if err := st.Publish(ctx, []reporting.Verdict{v}); err != nil {
			t.Fatal(err)
		}
		if err := st.Flush(ctx); err != nil {
			t.Fatalf("write with ca_file: %v (health: %v)", err, st.Health())
		}
		got, err := st.Verdicts(ctx, time.Hour)
		if err != nil {
			t.Fatalf("read with ca_file: %v", err)
		}
		if len(got) == 0 || got[0].Check != "tls" {
			t.Fatalf("read back %+v, want the verdict of check tls", got)
		}
	})
	t.Run("server_name", func(t *testing.T) {
		// The certificate names 127.0.0.1, ::1 and localhost, not this.
		st := open(tlsclient.Config{CAFile: ca.CAFile, ServerName: "influx.internal"})
		_, err := st.Verdicts(ctx, time.Hour)
		if err == nil || !strings.Contains(err.Error(), "influx.internal") {
			t.Fatalf("read with server_name influx.internal: err = %v, want a name mismatch", err)
		}
		st = open(tlsclient.Config{CAFile: ca.CAFile, ServerName: "localhost"})
		if _, err := st.Verdicts(ctx, time.Hour); err != nil {
			t.Fatalf("read with server_name localhost: %v", err)
		}
	})
}

// TestTLSConfigErrors: a bad tls key is a config error naming the key and
// the file; insecure_skip_verify is a warning.
func TestTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct {
		tls  tlsclient.Config
		url  string
		want []string
	}{
		{tlsclient.Config{CAFile: missing}, "", []string{"tls.ca_file: ", missing, "no such file"}},
		{tlsclient.Config{CAFile: notPEM}, "", []string{"tls.ca_file: " + notPEM + ": no PEM certificate found"}},
		{tlsclient.Config{CertFile: notPEM}, "", []string{"tls.key_file: required with cert_file"}},
		{tlsclient.Config{CertFile: notPEM, KeyFile: notPEM}, "", []string{"tls.cert_file: " + notPEM}},
		{tlsclient.Config{CAFile: notPEM}, "http://10.0.0.1:8086", []string{"tls: set, but url \"http://10.0.0.1:8086\" is http"}},
	} {
		u := tc.url
		if u == "" {
			u = "https://influx.internal:8086"
		}
		c := influx.Config{URL: u, Bucket: "b", TLS: tc.tls}
		err := c.ValidateAndSetDefaults()
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: err = %v, want it to hold %q", tc.tls, err, w)
			}
		}
	}
	c := influx.Config{URL: "https://influx.internal:8086", Bucket: "b", TLS: tlsclient.Config{InsecureSkipVerify: true}}
	if err := c.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, "tls.insecure_skip_verify: true: certificates are not verified") {
		t.Fatalf("warnings = %q", w)
	}
}
