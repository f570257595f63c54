package main

import (
	"reflect"
	"strings"
	"testing"
)

// TestForeignKeyHintHelpers: the hints keyHint (config.go) can give for an
// Alertmanager key under alerting, a docker-compose x- scratch key, a key
// written one level too high and a duration written in words.
func TestForeignKeyHintHelpers(t *testing.T) {
	for key, want := range map[string]string{
		"alerting.route":                        "Alertmanager's route",
		"alerting.receivers[0].webhook_configs": "is a receiver's webhook in vigil",
		"x-defaults":                            "vigil has no scratch key",
		"checks[0].http.valid_http_versions":    "http2: required",
		"alerting.conditions":                   "",
		"checks[0].route":                       "",
		"defaults":                              "",
	} {
		got := foreignKeyHint(strings.Split(key, "."))
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("foreignKeyHint(%s) = %q, want it to hold %q", key, got, want)
		}
	}
	if h := foreignKeyHint([]string{"x-defaults"}); strings.Contains(h, "did you mean") || strings.Contains(h, "rename") {
		t.Errorf("x-defaults: %q", h)
	}

	file := reflect.TypeOf(File{})
	check := file
	if f, ok := fieldsOf(file); ok {
		check = f["checks"].Elem()
	}
	for _, tc := range []struct {
		key  string
		t    reflect.Type
		want string
	}{
		{"checks[0].path", check, " (path is a key of checks[0].http, not of checks[0]: indent it under http:)"},
		{"expect", file, "expect is a key of checks[…]"},
		{"checks[0].nonesuch", check, ""},
	} {
		got := higherKeyHint(strings.Split(tc.key, "."), tc.t)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("higherKeyHint(%s) = %q, want %q", tc.key, got, tc.want)
		}
	}

	for in, want := range map[string]string{"5 minutes": " (write 5m)", "30 sec": " (write 30s)", "1 hour": " (write 1h)",
		"250 ms": " (write 250ms)", "2 days": " (write 2d)", "5m": "", "five minutes": "", "5": "",
		"5S": " (write 5s)", "10MS": " (write 10ms)", "1w": " (write 7d)", "2 weeks": " (write 14d)", "1.5w": ""} {
		if got := durationHint(in); got != want {
			t.Errorf("durationHint(%q) = %q, want %q", in, got, want)
		}
	}
}
