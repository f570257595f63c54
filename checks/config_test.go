package checks_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

func TestInvalidConfig(t *testing.T) {
	f := false
	tests := []struct {
		name     string
		build    func() error
		want     []string
		sentinel error
	}{
		{"status", func() error {
			_, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{Status: checks.StatusList{"2xx-3"}}, checks.Options{})
			return err
		}, []string{`expect.status: "2xx-3": not a status code or range`}, checks.ErrBadStatus},
		{"header regex", func() error {
			_, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{Headers: map[string]string{"content-type": "~["}}, checks.Options{})
			return err
		}, []string{"expect.headers.content-type: bad regex \"[\": missing closing ]: `[`"}, checks.ErrBadRegex},
		{"checksum algo", func() error {
			_, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{Checksum: "sha257:" + strings.Repeat("ab", 32)}, checks.Options{})
			return err
		}, []string{`expect.checksum: want "sha256:<64 hex>" (or sha1, md5, crc32), got "sha257:…"`}, checks.ErrBadChecksum},
		{"checksum length", func() error {
			_, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{Checksum: "crc32:abcd"}, checks.Options{})
			return err
		}, []string{`expect.checksum: want "crc32:<8 hex>", got 4 characters after "crc32:"`}, checks.ErrBadChecksum},
		{"body and json", func() error {
			_, err := checks.NewHTTP(checks.HTTPSpec{Body: "x", JSON: map[string]any{"a": 1}}, checks.Expect{}, checks.Options{})
			return err
		}, []string{"http.json: set either body or json, not both"}, checks.ErrConflict},
		{"url and path", func() error {
			_, err := checks.NewHTTP(checks.HTTPSpec{URL: "http://example.test/", Path: "/x"}, checks.Expect{}, checks.Options{})
			return err
		}, []string{"http.url: set either url or path, not both"}, checks.ErrConflict},
		{"relative url", func() error {
			_, err := checks.NewHTTP(checks.HTTPSpec{URL: "/x"}, checks.Expect{}, checks.Options{})
			return err
		}, []string{`http.url: "/x": want an absolute http:// or https:// URL`}, checks.ErrBadURL},
		{"path without slash", func() error {
			_, err := checks.NewHTTP(checks.HTTPSpec{Path: "healthz"}, checks.Expect{}, checks.Options{})
			return err
		}, []string{`http.path: "healthz": must start with "/"`}, checks.ErrBadURL},
		{"method", func() error {
			_, err := checks.NewHTTP(checks.HTTPSpec{Method: "GE T"}, checks.Expect{}, checks.Options{})
			return err
		}, []string{`http.method: "GE T" is not an HTTP method`}, checks.ErrBadMethod},
		{"tls min_version and ca_file", func() error {
			_, err := checks.NewHTTP(checks.HTTPSpec{TLS: checks.TLSOptions{MinVersion: "1.4", CAFile: "/nonexistent/ca.pem"}}, checks.Expect{}, checks.Options{})
			return err
		}, []string{
			`http.tls.min_version: "1.4": want "1.0", "1.1", "1.2" or "1.3"`,
			"http.tls.ca_file: open /nonexistent/ca.pem: no such file or directory",
		}, checks.ErrCAFile},
		{"size", func() error {
			_, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{Size: checks.SizeExpect{Min: 2 << 10, Max: 1 << 10}}, checks.Options{})
			return err
		}, []string{"expect.size: min 2KiB is above max 1KiB"}, checks.ErrBadValue},
		{"size over body_limit", func() error {
			_, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{Size: checks.SizeExpect{Max: 20 << 20}}, checks.Options{})
			return err
		}, []string{"expect.size.max: 20MiB is above http.body_limit 10MiB"}, checks.ErrBadValue},
		{"json and body regex", func() error {
			_, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{
				JSON: []checks.JSONExpect{{Path: ""}, {Path: "a", Regex: "("}, {Path: "b", Exists: &f, Equals: 1}},
				Body: checks.BodyExpect{Regex: []string{"ok", "[z-a]"}},
			}, checks.Options{})
			return err
		}, []string{
			"expect.body.regex[1]: bad regex \"[z-a]\": invalid character class range: `z-a`",
			"expect.json[0].path: empty JSON path",
			"expect.json[1].regex: bad regex \"(\": missing closing ): `(`",
			"expect.json[2].exists: false cannot be combined with equals, regex, gt, gte, lt or lte",
		}, checks.ErrBadRegex},
		{"content_type and negatives", func() error {
			_, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{ContentType: "json", TTFB: -time.Second, CertMinDays: -1}, checks.Options{})
			return err
		}, []string{
			"expect.ttfb: must not be negative",
			"expect.cert_min_days: must not be negative",
			`expect.content_type: "json" is not a media type`,
		}, checks.ErrBadValue},
		{"tcp rejects http keys", func() error {
			_, err := checks.NewTCP(checks.TCPSpec{Expect: "~("}, checks.Expect{Status: checks.StatusList{"200"}, Checksum: "md5:" + strings.Repeat("0", 32)}, checks.Options{})
			return err
		}, []string{
			"tcp.expect: bad regex \"(\": missing closing ): `(`",
			"expect.checksum: tcp checks do not use it",
			"expect.status: tcp checks do not use it",
		}, checks.ErrUnsupported},
		{"tls rejects body", func() error {
			_, err := checks.NewTLS(checks.TLSSpec{}, checks.Expect{Body: checks.BodyExpect{Contains: []string{"x"}}}, checks.Options{})
			return err
		}, []string{"expect.body: tls checks do not use it"}, checks.ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.build()
			var got []string
			for _, e := range units.Errors(err) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("error does not wrap %v", tt.sentinel)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	s := checks.HTTPSpec{Headers: map[string]string{"x-api-key": "k", "host": "example.test"}}
	if err := s.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	if s.Method != "GET" || s.Path != "" || s.BodyLimit != 10<<20 || s.TLS.MinVersion != "1.2" {
		t.Errorf("defaults: method %q path %q body_limit %v min_version %q", s.Method, s.Path, s.BodyLimit, s.TLS.MinVersion)
	}
	tcp := checks.TCPSpec{}
	if err := tcp.ValidateAndSetDefaults(); err != nil || tcp.ReadLimit != 64<<10 {
		t.Errorf("tcp defaults: read_limit %v, %v", tcp.ReadLimit, err)
	}
	// A validated Expect can be reused and validated again.
	e := checks.Expect{Status: checks.StatusList{"200"}, Headers: map[string]string{"cache-control": "~max-age"}}
	for range 2 {
		if err := e.ValidateAndSetDefaults(); err != nil {
			t.Fatal(err)
		}
	}
}
