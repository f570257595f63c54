package checktest

import (
	"fmt"
	"strings"
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
