package checks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"go.yaml.in/yaml/v3"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// decode decodes YAML the way the config loader does: weakly typed input,
// TextUnmarshaler fields (sizes), durations from strings, unknown keys
// rejected.
func decode(t *testing.T, src string, out any) {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(src), &m); err != nil {
		t.Fatal(err)
	}
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:           out,
		WeaklyTypedInput: true,
		ErrorUnused:      true,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			mapstructure.StringToTimeDurationHookFunc(),
			mapstructure.TextUnmarshallerHookFunc(),
		),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(m); err != nil {
		t.Fatalf("decode: %v", err)
	}
}

// TestDecodeEveryKey decodes a check using every documented key (as the
// loader delivers them: lower-cased map keys) and runs it.
func TestDecodeEveryKey(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	var c struct {
		HTTP   checks.HTTPSpec `mapstructure:"http"`
		Expect checks.Expect   `mapstructure:"expect"`
	}
	decode(t, `
http:
  method: get
  path: /asset.bin
  headers: {x-tenant: acme}
  follow_redirects: true
  cache_bust: true
  reuse_connections: false
  body_limit: 1MiB
  user_agent: probe/1
  http2: off
  tls: {insecure_skip_verify: false, server_name: "", min_version: "1.2"}
expect:
  status: 200
  headers:
    content-type: application/octet-stream
    cache-control: "~max-age=\\d+"
    access-control-allow-origin: present
    x-powered-by: absent
  content_type: application/octet-stream
  body: {not_contains: [zzzz-not-there], regex: ["(?s)."]}
  checksum: sha256:`+checktest.AssetSHA256()+`
  size: {min: 64KiB, max: 64KiB}
  ttfb: 5s
  duration: 5s
`, &c)
	h, err := checks.NewHTTP(c.HTTP, c.Expect, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := h.Run(context.Background(), checks.Target{URL: o.URL()})
	if !r.OK || len(r.Assertions) != 12 {
		t.Fatalf("%s %s (%d assertions: %+v)", r.Cause, r.Err, len(r.Assertions), r.Assertions)
	}

	var j struct {
		HTTP   checks.HTTPSpec `mapstructure:"http"`
		Expect checks.Expect   `mapstructure:"expect"`
	}
	decode(t, `
http: {method: POST, path: /login, json: {user: demo, password: demo}}
expect:
  status: "200-299"
  json:
    - {path: token, exists: true}
    - {path: $.token, regex: "^[0-9a-f]{32}$"}
    - path: missing
      exists: false
`, &j)
	h, err = checks.NewHTTP(j.HTTP, j.Expect, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := h.Run(context.Background(), checks.Target{URL: o.URL()}); !r.OK {
		t.Fatalf("login: %s %s %+v", r.Cause, r.Err, r.Assertions)
	}

	var tc struct {
		TCP    checks.TCPSpec `mapstructure:"tcp"`
		TLS    checks.TLSSpec `mapstructure:"tls"`
		Expect checks.Expect  `mapstructure:"expect"`
	}
	decode(t, `
tcp: {send: "GET /healthz HTTP/1.0\r\n\r\n", expect: "~HTTP/1\\.. 200", read_limit: 4KiB}
tls: {server_name: localhost, ca_file: "", insecure_skip_verify: true}
expect: {duration: 5s, cert_min_days: 0}
`, &tc)
	if tc.TCP.ReadLimit != 4<<10 || tc.Expect.Duration != 5*time.Second || !tc.TLS.InsecureSkipVerify {
		t.Errorf("decoded %+v", tc)
	}
	tcp, err := checks.NewTCP(tc.TCP, tc.Expect, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := tcp.Run(context.Background(), checks.Target{URL: strings.Replace(o.URL(), "http", "tcp", 1)}); !r.OK {
		t.Errorf("tcp: %s %s", r.Cause, r.Err)
	}
}
