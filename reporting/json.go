package reporting

import (
	"encoding/json"
	"net/http"
	"time"
)

// WriteJSON answers v as JSON with status code, never cached, as the
// agent's /api/v1/ endpoints answer. < > & are written as they are, not as
// \u003c and the like: the answers are application/json, never HTML, and
// "<agent.admin_token>" reads as written.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// verdictJSON is the wire form of a Verdict: snake_case keys, durations in
// milliseconds (float), times in RFC 3339.
type verdictJSON struct {
	Check      string     `json:"check"`
	Target     string     `json:"target"`
	Tier       string     `json:"tier"`
	Region     string     `json:"region"`
	Vantage    string     `json:"vantage"`
	State      State      `json:"state"`
	OK         bool       `json:"ok"`
	Cause      string     `json:"cause"`
	Err        string     `json:"error,omitempty"`
	StatusCode int        `json:"status_code"`
	Proto      string     `json:"proto,omitempty"`
	TTFBMs     float64    `json:"ttfb_ms"`
	DurationMs float64    `json:"duration_ms"`
	DNSMs      float64    `json:"dns_ms"`
	ConnectMs  float64    `json:"connect_ms"`
	TLSMs      float64    `json:"tls_ms"`
	TransferMs float64    `json:"transfer_ms"`
	Streak     int        `json:"streak"`
	HeldUntil  *time.Time `json:"held_until,omitempty"`
	Since      *time.Time `json:"since,omitempty"`
	IntervalMs float64    `json:"interval_ms"`
	At         time.Time  `json:"at"`
	Expires    time.Time  `json:"expires"`
	Artifact   string     `json:"artifact,omitempty"`
	URL        string     `json:"url,omitempty"`
	CertExpiry *time.Time `json:"cert_expiry,omitempty"`
	Instance   string     `json:"instance,omitempty"`
	Duplicates []string   `json:"duplicate_instances,omitempty"`
}

// Ms converts a duration to float milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// FromMs converts float milliseconds to a duration.
func FromMs(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// MarshalJSON writes the snake_case wire form.
func (v Verdict) MarshalJSON() ([]byte, error) {
	return json.Marshal(verdictJSON{
		Check: v.Check, Target: v.Target, Tier: v.Tier, Region: v.Region, Vantage: v.Vantage,
		State: v.State, OK: v.OK, Cause: v.Cause, Err: v.Err, StatusCode: v.StatusCode, Proto: v.Proto,
		TTFBMs: Ms(v.TTFB), DurationMs: Ms(v.Duration), DNSMs: Ms(v.DNS), ConnectMs: Ms(v.Connect),
		TLSMs: Ms(v.TLS), TransferMs: Ms(v.Transfer), Streak: v.Streak, IntervalMs: Ms(v.Interval),
		At: v.At, Expires: v.Expires, Artifact: v.Artifact, URL: v.URL, CertExpiry: timePtr(v.CertExpiry),
		HeldUntil: timePtr(v.HeldUntil), Since: timePtr(v.Since), Instance: v.Instance, Duplicates: v.Duplicates,
	})
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// UnmarshalJSON reads the snake_case wire form.
func (v *Verdict) UnmarshalJSON(b []byte) error {
	var w verdictJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*v = Verdict{
		Check: w.Check, Target: w.Target, Tier: w.Tier, Region: w.Region, Vantage: w.Vantage,
		State: w.State, OK: w.OK, Cause: w.Cause, Err: w.Err, StatusCode: w.StatusCode, Proto: w.Proto,
		TTFB: FromMs(w.TTFBMs), Duration: FromMs(w.DurationMs), DNS: FromMs(w.DNSMs),
		Connect: FromMs(w.ConnectMs), TLS: FromMs(w.TLSMs), Transfer: FromMs(w.TransferMs),
		Streak: w.Streak, Interval: FromMs(w.IntervalMs), At: w.At, Expires: w.Expires,
		Artifact: w.Artifact, URL: w.URL, Instance: w.Instance, Duplicates: w.Duplicates,
	}
	if w.CertExpiry != nil {
		v.CertExpiry = *w.CertExpiry
	}
	if w.HeldUntil != nil {
		v.HeldUntil = *w.HeldUntil
	}
	if w.Since != nil {
		v.Since = *w.Since
	}
	return nil
}

type signalJSON struct {
	Pool       string    `json:"pool"`
	Origin     string    `json:"origin"`
	Region     string    `json:"region"`
	Vantage    string    `json:"vantage"`
	At         time.Time `json:"at"`
	WindowMs   float64   `json:"window_ms"`
	Requests   int       `json:"requests"`
	Status5xx  int       `json:"status_5xx"`
	ConnErrors int       `json:"conn_errors"`
	Timeouts   int       `json:"timeouts"`
	P95Ms      float64   `json:"p95_ms"`
	Ejected    bool      `json:"ejected"`
	Reason     string    `json:"reason,omitempty"`
	Out        bool      `json:"out"`
	OutBy      string    `json:"out_by,omitempty"`
}

// MarshalJSON writes the snake_case wire form.
func (s Signal) MarshalJSON() ([]byte, error) {
	return json.Marshal(signalJSON{s.Pool, s.Origin, s.Region, s.Vantage, s.At, Ms(s.Window),
		s.Requests, s.Status5xx, s.ConnErrors, s.Timeouts, Ms(s.P95), s.Ejected, s.Reason, s.Out, s.OutBy})
}

// UnmarshalJSON reads the snake_case wire form.
func (s *Signal) UnmarshalJSON(b []byte) error {
	var w signalJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = Signal{w.Pool, w.Origin, w.Region, w.Vantage, w.At, FromMs(w.WindowMs), w.Requests,
		w.Status5xx, w.ConnErrors, w.Timeouts, FromMs(w.P95Ms), w.Ejected, w.Reason, w.Out, w.OutBy}
	return nil
}
