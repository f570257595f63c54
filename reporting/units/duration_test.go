package units

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour, "0.5d": 12 * time.Hour,
		"30m": 30 * time.Minute, " 2h ": 2 * time.Hour} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"1x": `"1x": not a duration`, "5": `"5": a duration needs a unit`, "d": `"d": not a duration`,
		"99999999999d": `not a duration`} {
		if _, err := ParseDuration(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDuration(%q): %v, want an error with %q", in, err, want)
		}
	}
}
