// Package units holds the config value types that carry a unit: Percent and
// ByteSize. Durations are plain time.Duration fields; the config loader
// (cmd/vigil) parses them and rejects a number without a unit.
//
// It is a leaf package (stdlib only) so every config-owning package — checks,
// canary, reporting, proxy — can share the same parsing and error text.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Percent is a percentage written "25%" (or "0.5%") in config, stored as the
// percentage number (25, 0.5). A bare number without "%" is rejected so a
// reader never wonders whether 0.25 means 25 % or a quarter of a percent.
type Percent float64

// ParsePercent parses "25%", "99.9%".
func ParsePercent(s string) (Percent, error) {
	t := strings.TrimSpace(s)
	if !strings.HasSuffix(t, "%") {
		return 0, fmt.Errorf("%q: a percentage needs a %% sign, e.g. \"25%%\"", s)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "%")), 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 100 {
		return 0, fmt.Errorf("%q: want a percentage between 0%% and 100%%", s)
	}
	return Percent(f), nil
}

// UnmarshalText implements encoding.TextUnmarshaler (used by the config loader).
func (p *Percent) UnmarshalText(b []byte) error {
	v, err := ParsePercent(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// MarshalText writes the config form.
func (p Percent) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// String writes "25%".
func (p Percent) String() string { return strconv.FormatFloat(float64(p), 'f', -1, 64) + "%" }

// Fraction returns the percentage as a fraction (25% → 0.25).
func (p Percent) Fraction() float64 { return float64(p) / 100 }

// ByteSize is a size in bytes written with a unit in config: "512B", "64KiB",
// "10MiB", "1GiB" (binary) or "10kB", "10MB", "1GB" (decimal).
type ByteSize int64

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// ParseByteSize parses "10MiB", "512B", "1GB".
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			n := strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			f, err := strconv.ParseFloat(n, 64)
			if err != nil || f < 0 || math.IsNaN(f) || f*float64(u.mult) > math.MaxInt64/2 {
				break
			}
			return ByteSize(f * float64(u.mult)), nil
		}
	}
	return 0, fmt.Errorf("%q: want a size with a unit, e.g. \"10MiB\", \"512KiB\", \"100B\"", s)
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (b *ByteSize) UnmarshalText(t []byte) error {
	v, err := ParseByteSize(string(t))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// MarshalText writes the config form.
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// String writes the size with the largest exact binary unit.
func (b ByteSize) String() string {
	switch {
	case b != 0 && b%(1<<30) == 0:
		return strconv.FormatInt(int64(b)>>30, 10) + "GiB"
	case b != 0 && b%(1<<20) == 0:
		return strconv.FormatInt(int64(b)>>20, 10) + "MiB"
	case b != 0 && b%(1<<10) == 0:
		return strconv.FormatInt(int64(b)>>10, 10) + "KiB"
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// ConfigDuration writes a duration as a config writes it: 24h, 30m, and
// time.Duration's form otherwise (1h30m0s, 90s).
func ConfigDuration(d time.Duration) string {
	switch {
	case d > 0 && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d > 0 && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// Share writes a ratio 0..1 as a percentage for people: "48%", "2.5%",
// "<0.1%".
func Share(ratio float64) string {
	p := ratio * 100
	switch {
	case p == 0:
		return "0%"
	case p < 0.1:
		return "<0.1%"
	case p < 10 && math.Round(p) != p:
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.0f%%", math.Floor(p+0.5))
}
