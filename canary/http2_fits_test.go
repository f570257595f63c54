package canary

import (
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/scripts"
)

// TestHTTP2ModeFitsTargetURL: http2: h2c on an https:// target (or the
// check's own url) and http2: required on an http:// one are config errors
// naming the key, as they were only for http.url (such a check validated
// and then spoke HTTP/1.1, passing against an HTTP/1.1-only origin).
func TestHTTP2ModeFitsTargetURL(t *testing.T) {
	targets := []TargetConfig{{Name: "s", URL: "https://127.0.0.1:8443"}}
	for _, tc := range []struct {
		check CheckConfig
		want  string
	}{
		{CheckConfig{Name: "c", Targets: []string{"s"}, HTTP: &checks.HTTPSpec{HTTP2: "h2c"}},
			`targets[0]: "s" (url "https://127.0.0.1:8443"): http.http2: h2c is HTTP/2 over plain http://`},
		{CheckConfig{Name: "c", URL: "http://127.0.0.1:8080", HTTP: &checks.HTTPSpec{HTTP2: "required"}},
			`url: "http://127.0.0.1:8080": http.http2: required needs an https:// url`},
		{CheckConfig{Name: "c", Targets: []string{"s"}, Script: scripts.Script{{Name: "one", HTTP: &checks.HTTPSpec{HTTP2: "h2c"}}}},
			`script[0].http.http2: h2c is HTTP/2 over plain http://`},
	} {
		c := Config{Targets: targets, Checks: []CheckConfig{tc.check}}
		err := c.ValidateAndSetDefaults()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v\nwant one containing %q", err, tc.want)
		}
	}
}
