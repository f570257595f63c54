package proxy

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// https:// origins are verified by default; tls.ca_file trusts an internal
// CA, tls.server_name sets the name sent and verified, and
// tls.insecure_skip_verify turns verification off.
func TestOriginTLS(t *testing.T) {
	o := checktest.NewTLSOrigin() // a private CA; the leaf names localhost and 127.0.0.1
	defer o.Close()
	ca, err := o.CAFile()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		tls  OriginTLSConfig
		want int
	}{
		{"unknown CA", OriginTLSConfig{}, http.StatusBadGateway},
		{"ca_file", OriginTLSConfig{CAFile: ca}, http.StatusOK},
		{"server_name in the certificate", OriginTLSConfig{CAFile: ca, ServerName: "localhost"}, http.StatusOK},
		{"server_name not in the certificate", OriginTLSConfig{CAFile: ca, ServerName: "other.example"}, http.StatusBadGateway},
		{"TLS 1.3 only", OriginTLSConfig{CAFile: ca, MinVersion: "1.3"}, http.StatusOK},
		{"insecure_skip_verify", OriginTLSConfig{InsecureSkipVerify: true}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := pool1(PolicyFirst, o.URL())
			cfg.Pools[0].TLS = tc.tls
			cfg.Pools[0].Retry.Tries = 1
			h := start(t, cfg, nil, false)
			code, body, _ := h.do("GET", "/", "")
			if code != tc.want {
				t.Fatalf("got %d %q, want %d", code, body, tc.want)
			}
			if tc.want == http.StatusBadGateway {
				if v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"origin": noOrigin, "code": "502"}); v != 1 {
					t.Fatalf("502 not counted as the proxy's own answer: %v", v)
				}
			}
		})
	}
}

func TestOriginTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	for _, tc := range []struct {
		tls  OriginTLSConfig
		want string
	}{
		{OriginTLSConfig{CAFile: filepath.Join(dir, "missing.pem")}, "pools[0].tls.ca_file: open "},
		{OriginTLSConfig{CAFile: notPEM}, "pools[0].tls.ca_file: " + notPEM + ": no PEM certificate in it"},
		{OriginTLSConfig{MinVersion: "1.1"}, `pools[0].tls.min_version: "1.1": want "1.2" or "1.3"`},
	} {
		cfg := pool1(PolicyFirst, "https://127.0.0.1:1")
		cfg.Pools[0].TLS = tc.tls
		_, err := New(cfg, nil, testLogger(t))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tc.tls, err, tc.want)
		}
	}
}
