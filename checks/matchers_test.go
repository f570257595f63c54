package checks_test

import (
	"errors"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

func TestParseStatusRanges(t *testing.T) {
	tests := []struct {
		in     string
		canon  string
		match  []int
		reject []int
	}{
		{"200", "200", []int{200}, []int{199, 201, 404}},
		{"200-299,304", "200-299,304", []int{200, 250, 299, 304}, []int{199, 300, 303, 305}},
		{" 2xx , 304 ", "200-299,304", []int{204, 304}, []int{300, 500}},
		{"5XX", "500-599", []int{500, 599}, []int{499}},
		{"100-599", "100-599", []int{100, 599}, []int{99, 600}},
		{"301-301", "301", []int{301}, []int{302}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			rs, err := checks.ParseStatusRanges(tt.in)
			if err != nil {
				t.Fatalf("ParseStatusRanges(%q): %v", tt.in, err)
			}
			if rs.String() != tt.canon {
				t.Errorf("String() = %q, want %q", rs.String(), tt.canon)
			}
			for _, c := range tt.match {
				if !rs.Match(c) {
					t.Errorf("Match(%d) = false, want true", c)
				}
			}
			for _, c := range tt.reject {
				if rs.Match(c) {
					t.Errorf("Match(%d) = true, want false", c)
				}
			}
		})
	}
}

func TestParseStatusRangesErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `"": not a status code or range`},
		{"2xx-3", `"2xx-3": not a status code or range`},
		{"200-299,30", `"30": not a status code or range`},
		{"299-200", `"299-200": not a status code or range`},
		{"600", `"600": not a status code or range`},
		{"099", `"099": not a status code or range`},
		{"200,", `"": not a status code or range`},
		{"6xx", `"6xx": not a status code or range`},
		{"+200", `"+200": not a status code or range`},
	}
	for _, tt := range tests {
		_, err := checks.ParseStatusRanges(tt.in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseStatusRanges(%q) error = %v, want %s", tt.in, err, tt.want)
		}
		if !errors.Is(err, checks.ErrBadStatus) {
			t.Errorf("ParseStatusRanges(%q) error does not wrap ErrBadStatus", tt.in)
		}
	}
}

func TestHeaderMatcher(t *testing.T) {
	tests := []struct {
		matcher string
		values  []string
		want    bool
	}{
		{"present", []string{"*"}, true},
		{"present", nil, false},
		{"present", []string{""}, true},
		{"absent", nil, true},
		{"absent", []string{"x"}, false},
		{"*", []string{"*"}, true},
		{"*", []string{"https://a"}, false},
		{"*", nil, false},
		{"~max-age=\\d+", []string{"public, max-age=300"}, true},
		{"~^max-age=\\d+$", []string{"public, max-age=300"}, false},
		{"~max-age=\\d+", []string{"no-store"}, false},
		{"~max-age", nil, false},
		{"=present", []string{"present"}, true},
		{"=present", []string{"yes"}, false},
		{"=~x", []string{"~x"}, true},
		{"a, b", []string{"a", "b"}, true}, // several values join with ", "
		{"", []string{""}, true},
	}
	for _, tt := range tests {
		m, err := checks.ParseHeaderMatcher(tt.matcher)
		if err != nil {
			t.Fatalf("ParseHeaderMatcher(%q): %v", tt.matcher, err)
		}
		if got := m.Match(tt.values); got != tt.want {
			t.Errorf("%q.Match(%q) = %v, want %v", tt.matcher, tt.values, got, tt.want)
		}
		if back, err := checks.ParseHeaderMatcher(m.String()); err != nil || back.Kind != m.Kind || back.Value != m.Value {
			t.Errorf("round trip %q → %q → %+v, %v", tt.matcher, m.String(), back, err)
		}
	}
	_, err := checks.ParseHeaderMatcher("~[")
	if !errors.Is(err, checks.ErrBadRegex) || err.Error() != "bad regex \"[\": missing closing ]: `[`" {
		t.Errorf("ParseHeaderMatcher(~[) error = %v", err)
	}
}

func FuzzParseStatusRanges(f *testing.F) {
	for _, s := range []string{"200", "200-299,304", "2xx", "", "2xx-3", "100-599", " 500 , 5xx", "299-200", "1000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := checks.ParseStatusRanges(s)
		if err != nil {
			if !errors.Is(err, checks.ErrBadStatus) {
				t.Fatalf("error %v does not wrap ErrBadStatus", err)
			}
			return
		}
		if len(rs) == 0 {
			t.Fatalf("%q parsed to no ranges without an error", s)
		}
		for _, r := range rs {
			if r.Lo < 100 || r.Hi > 599 || r.Lo > r.Hi {
				t.Fatalf("%q: out of range %+v", s, r)
			}
			if !rs.Match(r.Lo) || !rs.Match(r.Hi) {
				t.Fatalf("%q: range %+v does not match its own bounds", s, r)
			}
		}
		// The canonical form parses back to the same ranges.
		back, err := checks.ParseStatusRanges(rs.String())
		if err != nil || back.String() != rs.String() {
			t.Fatalf("%q: canonical %q does not round-trip: %v", s, rs.String(), err)
		}
		for c := 0; c < 700; c += 7 {
			if rs.Match(c) != back.Match(c) {
				t.Fatalf("%q: Match(%d) differs after round trip", s, c)
			}
		}
	})
}

func FuzzParseHeaderMatcher(f *testing.F) {
	for _, s := range []string{"present", "absent", "*", "~max-age=\\d+", "~[", "=present", "=~x", "", "~", "~(a|b)*c"} {
		f.Add(s, "max-age=300")
	}
	f.Fuzz(func(t *testing.T, s, value string) {
		m, err := checks.ParseHeaderMatcher(s)
		if err != nil {
			if !errors.Is(err, checks.ErrBadRegex) {
				t.Fatalf("error %v does not wrap ErrBadRegex", err)
			}
			return
		}
		got := m.Match([]string{value})
		if m.Match(nil) != (m.Kind == checks.MatchAbsent) {
			t.Fatalf("%q: Match(absent) wrong for kind %v", s, m.Kind)
		}
		back, err := checks.ParseHeaderMatcher(m.String())
		if err != nil {
			t.Fatalf("%q: String() %q does not parse: %v", s, m.String(), err)
		}
		if back.Match([]string{value}) != got {
			t.Fatalf("%q: round trip through %q changes Match(%q)", s, m.String(), value)
		}
	})
}
