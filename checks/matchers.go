package checks

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
)

// Sentinel config errors. Every validation error wraps one of them, so tests
// and callers compare with errors.Is while users read the full sentence.
var (
	// ErrBadStatus: an expect.status element is not a status code (100–599),
	// a range "200-299" or a class "2xx".
	ErrBadStatus = errors.New("not a status code or range")
	// ErrBadRegex: a "~regex" (or regex list entry) does not compile.
	ErrBadRegex = errors.New("bad regex")
	// ErrBadChecksum: expect.checksum is not "<algo>:<hex>" with a known
	// algorithm and the right number of hex digits.
	ErrBadChecksum = errors.New("bad checksum")
	// ErrBadURL: http.url is not an absolute http(s) URL, or a target URL has
	// the wrong scheme for the check.
	ErrBadURL = errors.New("bad url")
	// ErrBadMethod: http.method is not an HTTP token.
	ErrBadMethod = errors.New("bad method")
	// ErrConflict: two keys that exclude each other are both set
	// (http.body and http.json, http.url and http.path).
	ErrConflict = errors.New("mutually exclusive")
	// ErrUnsupported: a key is set that this kind of check does not use
	// (e.g. expect.status on a tcp check).
	ErrUnsupported = errors.New("not used by this check")
	// ErrBadValue: a number, size, duration or version out of range.
	ErrBadValue = errors.New("bad value")
	// ErrCAFile: a ca_file cannot be read or holds no PEM certificate.
	ErrCAFile = errors.New("bad ca_file")
)

// StatusRange is an inclusive range of HTTP status codes; a single code has
// Lo == Hi.
type StatusRange struct{ Lo, Hi int }

// StatusRanges is a parsed expect.status: a list of codes and ranges.
type StatusRanges []StatusRange

// ParseStatusRanges parses a comma-separated list of status codes, ranges and
// classes: "200", "200-299,304", "2xx,304". Codes must lie in 100–599 and a
// range must not run backwards. Spaces around elements are ignored. The error
// names the offending element and wraps ErrBadStatus.
func ParseStatusRanges(s string) (StatusRanges, error) {
	var out StatusRanges
	for _, part := range strings.Split(s, ",") {
		p := strings.TrimSpace(part)
		r, ok := parseStatusRange(p)
		if !ok {
			return nil, fmt.Errorf("%q: %w", p, ErrBadStatus)
		}
		out = append(out, r)
	}
	return out, nil
}

func parseStatusRange(p string) (StatusRange, bool) {
	if len(p) == 3 && (p[1] == 'x' || p[1] == 'X') && (p[2] == 'x' || p[2] == 'X') && p[0] >= '1' && p[0] <= '5' {
		lo := int(p[0]-'0') * 100
		return StatusRange{lo, lo + 99}, true
	}
	lo, hi, isRange := strings.Cut(p, "-")
	a, ok := parseCode(lo)
	if !ok {
		return StatusRange{}, false
	}
	if !isRange {
		return StatusRange{a, a}, true
	}
	b, ok := parseCode(hi)
	if !ok || b < a {
		return StatusRange{}, false
	}
	return StatusRange{a, b}, true
}

func parseCode(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if len(s) != 3 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 100 || n > 599 {
		return 0, false
	}
	return n, true
}

// Match reports whether code lies in one of the ranges.
func (rs StatusRanges) Match(code int) bool {
	for _, r := range rs {
		if code >= r.Lo && code <= r.Hi {
			return true
		}
	}
	return false
}

// String writes the canonical form, e.g. "200-299,304".
func (rs StatusRanges) String() string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(r.Lo))
		if r.Hi != r.Lo {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(r.Hi))
		}
	}
	return b.String()
}

// HeaderMatcherKind says how a HeaderMatcher compares.
type HeaderMatcherKind int

// Header matcher kinds.
const (
	MatchExact   HeaderMatcherKind = iota // the value equals the string
	MatchRegex                            // "~regex": the value matches (unanchored)
	MatchPresent                          // "present": the header exists (any value)
	MatchAbsent                           // "absent": the header does not exist
)

// HeaderMatcher is one compiled expect.headers value.
type HeaderMatcher struct {
	Kind  HeaderMatcherKind
	Value string // exact value or regex source (without "~")
	re    *regexp.Regexp
}

// ParseHeaderMatcher compiles one matcher:
//   - "present" / "absent" (any case: "Present", "ABSENT"): the header
//     must / must not exist;
//   - "~regex": the value must match the Go regular expression (unanchored;
//     add ^…$ to anchor);
//   - "=text": the value must equal "text" exactly (to match the literal
//     words "present", "absent" or a value starting with "~");
//   - anything else: the value must equal the string exactly.
//
// A header sent several times is matched as its values joined with ", "
// (RFC 9110 §5.3). A bad regex wraps ErrBadRegex.
func ParseHeaderMatcher(s string) (HeaderMatcher, error) {
	switch {
	case strings.EqualFold(s, "present"):
		return HeaderMatcher{Kind: MatchPresent}, nil
	case strings.EqualFold(s, "absent"):
		return HeaderMatcher{Kind: MatchAbsent}, nil
	case strings.HasPrefix(s, "="):
		return HeaderMatcher{Kind: MatchExact, Value: s[1:]}, nil
	case strings.HasPrefix(s, "~"):
		re, err := compileRegex(s[1:])
		if err != nil {
			return HeaderMatcher{}, err
		}
		return HeaderMatcher{Kind: MatchRegex, Value: s[1:], re: re}, nil
	}
	return HeaderMatcher{Kind: MatchExact, Value: s}, nil
}

func compileRegex(src string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(src)
	if err != nil {
		var se *syntax.Error
		msg := err.Error()
		if errors.As(err, &se) {
			msg = se.Code.String()
			if se.Expr != "" {
				msg += ": `" + se.Expr + "`"
			}
		}
		return nil, fmt.Errorf("%w %q: %s", ErrBadRegex, src, msg)
	}
	return re, nil
}

// Match reports whether the header values (nil or empty when the header is
// absent) satisfy the matcher.
func (m HeaderMatcher) Match(values []string) bool {
	switch m.Kind {
	case MatchPresent:
		return len(values) > 0
	case MatchAbsent:
		return len(values) == 0
	}
	if len(values) == 0 {
		return false
	}
	v := joinValues(values)
	if m.Kind == MatchRegex {
		if m.re == nil { // a zero-built matcher: compile lazily, never panic
			re, err := regexp.Compile(m.Value)
			if err != nil {
				return false
			}
			return re.MatchString(v)
		}
		return m.re.MatchString(v)
	}
	return v == m.Value
}

// String writes the config form of the matcher.
func (m HeaderMatcher) String() string {
	switch m.Kind {
	case MatchPresent:
		return "present"
	case MatchAbsent:
		return "absent"
	case MatchRegex:
		return "~" + m.Value
	}
	if strings.EqualFold(m.Value, "present") || strings.EqualFold(m.Value, "absent") || strings.HasPrefix(m.Value, "~") || strings.HasPrefix(m.Value, "=") {
		return "=" + m.Value
	}
	return m.Value
}

func joinValues(values []string) string {
	if len(values) == 1 {
		return values[0]
	}
	return strings.Join(values, ", ")
}

// keyError is a config error whose text is a plain sentence while errors.Is
// still finds its sentinel (and any error wrapped with %w in the sentence).
type keyError struct {
	msg      string
	sentinel error
	inner    error
}

func (e *keyError) Error() string        { return e.msg }
func (e *keyError) Unwrap() error        { return e.inner }
func (e *keyError) Is(target error) bool { return target == e.sentinel }

// errorf formats a config error that wraps sentinel without repeating its text.
func errorf(sentinel error, format string, args ...any) error {
	inner := fmt.Errorf(format, args...)
	return &keyError{msg: inner.Error(), sentinel: sentinel, inner: inner}
}
