package checks_test

import (
	"errors"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestHEADBodyAssertions: a HEAD request gets no body, so body, json,
// checksum and size assertions on it are config errors naming the key
// (not_contains would otherwise always pass); header and status
// assertions are fine.
func TestHEADBodyAssertions(t *testing.T) {
	const tail = ": http.method HEAD gets no body to assert on (use GET, or drop the key)"
	cases := []struct {
		name   string
		expect checks.Expect
		want   string
	}{
		{"body.not_contains", checks.Expect{Body: checks.BodyExpect{NotContains: []string{"ERROR"}}}, "expect.body.not_contains" + tail},
		{"body.contains", checks.Expect{Body: checks.BodyExpect{Contains: []string{"ok"}}}, "expect.body.contains" + tail},
		{"body.regex", checks.Expect{Body: checks.BodyExpect{Regex: []string{"ok"}}}, "expect.body.regex" + tail},
		{"body.not_regex", checks.Expect{Body: checks.BodyExpect{NotRegex: []string{"(?i)error"}}}, "expect.body.not_regex" + tail},
		{"json", checks.Expect{JSON: []checks.JSONExpect{{Path: "ok"}}}, "expect.json" + tail},
		{"checksum", checks.Expect{Checksum: "crc32:00000000"}, "expect.checksum" + tail},
		{"size", checks.Expect{Size: checks.SizeExpect{Min: 10}}, "expect.size" + tail},
		{"status and headers", checks.Expect{Status: checks.StatusList{"200"}, Headers: checks.HeaderMatchers{"ETag": "present"}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := checks.NewHTTP(checks.HTTPSpec{Method: "head"}, c.expect, checks.Options{})
			if c.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || err.Error() != c.want || !errors.Is(err, checks.ErrConflict) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if _, err := checks.NewHTTP(checks.HTTPSpec{}, c.expect, checks.Options{}); err != nil {
				t.Fatalf("the same expect on a GET: %v", err)
			}
		})
	}
}
