package units

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var daysRE = regexp.MustCompile(`^(\d+(?:\.\d+)?)d(.*)$`)

// ParseDuration reads a duration as a config writes it: time.ParseDuration
// plus a leading "<n>d" for days ("7d", "1d12h", "2h"). A number without a
// unit is refused, and the error names the value.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	var days time.Duration
	if m := daysRE.FindStringSubmatch(t); m != nil {
		n, err := strconv.ParseFloat(m[1], 64)
		if err != nil || n*float64(24*time.Hour) > math.MaxInt64 {
			return 0, fmt.Errorf("%q: not a duration (use ms, s, m, h or d)", s)
		}
		days = time.Duration(n * float64(24*time.Hour))
		if t = m[2]; t == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		if _, nerr := strconv.ParseFloat(t, 64); nerr == nil && t != "0" {
			return 0, fmt.Errorf("%q: a duration needs a unit, e.g. \"%ss\"", s, t)
		}
		return 0, fmt.Errorf("%q: not a duration (use ms, s, m, h or d)", s)
	}
	return days + d, nil
}
