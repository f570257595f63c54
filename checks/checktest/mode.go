package checktest

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Mode is the fault an Origin injects. The zero value is ModeOK.
type Mode int

// The fault modes. Unless a mode says otherwise it applies to every path.
const (
	// ModeOK serves every route normally.
	ModeOK Mode = iota
	// ModeDown closes the listener (clients get "connection refused") and
	// every open connection; leaving it listens again on the same port.
	ModeDown
	// ModeBlackhole accepts connections and never answers (no TLS
	// handshake, no response); clients time out.
	ModeBlackhole
	// Mode503 answers every request, /healthz included, with 503.
	Mode503
	// ModePartial answers a fixed share of /api/* requests with 503
	// (WithPartialPercent, default 25%), spread evenly and
	// deterministically; /healthz and other paths are fine.
	ModePartial
	// ModeSlow delays the first byte of every response except /healthz by
	// the slow delay (WithSlowDelay, default 2.4s).
	ModeSlow
	// ModeCorrupt serves /asset.bin with status 200 and the right length
	// but wrong bytes; /healthz and other paths are fine.
	ModeCorrupt
	// ModeMissingHeader drops Access-Control-Allow-Origin from every
	// response.
	ModeMissingHeader
	// ModeFlapping alternates between ok and 503 for every request,
	// /healthz included: every N requests (WithFlapEvery, default 5) or,
	// with WithFlapPeriod, every period.
	ModeFlapping
	// ModeReset reads the request, then resets the connection (TCP RST)
	// without answering.
	ModeReset
)

var modeNames = []string{
	ModeOK: "ok", ModeDown: "down", ModeBlackhole: "blackhole", Mode503: "503",
	ModePartial: "partial", ModeSlow: "slow", ModeCorrupt: "corrupt",
	ModeMissingHeader: "missing_header", ModeFlapping: "flapping", ModeReset: "reset",
}

// Modes lists every mode in declaration order.
func Modes() []Mode {
	out := make([]Mode, len(modeNames))
	for i := range out {
		out[i] = Mode(i)
	}
	return out
}

// String is the mode's name as ParseMode accepts it ("ok", "down", …).
func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses a mode name (case-insensitive; "-" may stand for "_").
func ParseMode(s string) (Mode, error) {
	t := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_")
	for i, n := range modeNames {
		if n == t {
			return Mode(i), nil
		}
	}
	return ModeOK, fmt.Errorf("unknown fault mode %q (want one of %s)", s, strings.Join(modeNames, ", "))
}

// MarshalText writes the mode name.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText parses a mode name.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// SetFault applies a fault given as text, as `vigil demo fault` takes it:
// a mode name, optionally with a parameter after a colon —
// "partial:40%" (share of /api/* answering 503), "slow:3s" (first-byte
// delay), "flapping:10" (switch every 10 requests) or "flapping:30s"
// (switch every 30 s). A parameter on another mode is an error.
func (o *Origin) SetFault(s string) error {
	f, err := ParseFault(s)
	if err != nil {
		return err
	}
	switch {
	case f.partial >= 0:
		o.SetPartialPercent(f.partial)
	case f.slow >= 0:
		o.SetSlowDelay(f.slow)
	case f.flapN > 0 || f.flapD > 0:
		o.setFlap(f.flapN, f.flapD)
	}
	return o.SetMode(f.Mode)
}

// Fault is a fault mode with its parameter, as SetFault takes it.
type Fault struct {
	Mode    Mode
	partial float64       // partial:N%, or -1
	slow    time.Duration // slow:D, or -1
	flapN   int           // flapping:N
	flapD   time.Duration // flapping:D
}

// ParseFault reads a fault as SetFault does, without applying it: a mode
// name, optionally with a parameter after a colon.
func ParseFault(s string) (Fault, error) {
	name, param, hasParam := strings.Cut(strings.TrimSpace(s), ":")
	m, err := ParseMode(name)
	if err != nil {
		return Fault{}, err
	}
	f := Fault{Mode: m, partial: -1, slow: -1}
	if !hasParam {
		return f, nil
	}
	param = strings.TrimSpace(param)
	switch m {
	case ModePartial:
		p, err := strconv.ParseFloat(strings.TrimSuffix(param, "%"), 64)
		if err != nil || p < 0 || p > 100 {
			return Fault{}, fmt.Errorf("fault %q: want a percentage 0%%–100%%, e.g. partial:25%%", s)
		}
		f.partial = p
	case ModeSlow:
		d, err := time.ParseDuration(param)
		if err != nil || d < 0 {
			return Fault{}, fmt.Errorf("fault %q: want a duration, e.g. slow:2.4s", s)
		}
		f.slow = d
	case ModeFlapping:
		if n, err := strconv.Atoi(param); err == nil && n > 0 {
			f.flapN = n
		} else if d, err := time.ParseDuration(param); err == nil && d > 0 {
			f.flapD = d
		} else {
			return Fault{}, fmt.Errorf("fault %q: want a request count or a period, e.g. flapping:5 or flapping:30s", s)
		}
	default:
		return Fault{}, fmt.Errorf("fault %q: mode %s takes no parameter", s, m)
	}
	return f, nil
}
