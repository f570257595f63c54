package influx

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// Measurements written and read.
const (
	MeasurementVerdict = "vigil_verdict"
	MeasurementSignal  = "vigil_signal"
)

// Line protocol escaping (https://docs.influxdata.com/influxdb/v1.8/write_protocols/line_protocol_reference/).
// Newlines cannot appear inside a line of the outbox, so they become spaces
// in tag and string field values.
var (
	tagEscaper = strings.NewReplacer(",", `\,`, "=", `\=`, " ", `\ `, "\n", " ", "\r", " ")
	strEscaper = strings.NewReplacer(`"`, `\"`, `\`, `\\`, "\n", " ", "\r", " ")
)

type lineBuilder struct {
	b          []byte
	firstField bool
}

func (l *lineBuilder) start(measurement string) {
	l.b = append(l.b[:0], measurement...)
	l.firstField = true
}

// tag appends ",key=value"; empty values are left out (InfluxDB has no
// empty tags; readers see the missing tag as "").
func (l *lineBuilder) tag(k, v string) {
	if v == "" {
		return
	}
	l.b = append(l.b, ',')
	l.b = append(l.b, k...)
	l.b = append(l.b, '=')
	v = tagEscaper.Replace(v)
	if strings.HasSuffix(v, `\`) { // a trailing backslash would escape the separator
		v = v[:len(v)-1] + "_"
	}
	l.b = append(l.b, v...)
}

func (l *lineBuilder) key(k string) {
	if l.firstField {
		l.b = append(l.b, ' ')
		l.firstField = false
	} else {
		l.b = append(l.b, ',')
	}
	l.b = append(l.b, k...)
	l.b = append(l.b, '=')
}

func (l *lineBuilder) str(k, v string) {
	l.key(k)
	l.b = append(l.b, '"')
	l.b = append(l.b, strEscaper.Replace(v)...)
	l.b = append(l.b, '"')
}

func (l *lineBuilder) int(k string, v int64) {
	l.key(k)
	l.b = strconv.AppendInt(l.b, v, 10)
	l.b = append(l.b, 'i')
}

func (l *lineBuilder) float(k string, v float64) {
	l.key(k)
	l.b = strconv.AppendFloat(l.b, v, 'f', -1, 64)
}

func (l *lineBuilder) bool(k string, v bool) {
	l.key(k)
	l.b = strconv.AppendBool(l.b, v)
}

func (l *lineBuilder) end(ns int64) []byte {
	l.b = append(l.b, ' ')
	l.b = strconv.AppendInt(l.b, ns, 10)
	l.b = append(l.b, '\n')
	return append([]byte(nil), l.b...)
}

// verdictLine encodes one verdict. Every field is always written, with a
// fixed type, so last() of each field lands on the same timestamp and
// pivots into one row.
func verdictLine(l *lineBuilder, v *reporting.Verdict) []byte {
	l.start(MeasurementVerdict)
	l.tag("check", v.Check)
	l.tag("region", v.Region)
	l.tag("target", v.Target)
	l.tag("tier", v.Tier)
	l.tag("vantage", v.Vantage)
	l.str("state", string(v.State))
	l.bool("ok", v.OK)
	l.str("cause", v.Cause)
	l.int("status_code", int64(v.StatusCode))
	if v.Proto != "" {
		l.str("proto", v.Proto)
	}
	l.float("ttfb_ms", reporting.Ms(v.TTFB))
	l.float("duration_ms", reporting.Ms(v.Duration))
	l.float("dns_ms", reporting.Ms(v.DNS))
	l.float("connect_ms", reporting.Ms(v.Connect))
	l.float("tls_ms", reporting.Ms(v.TLS))
	l.float("transfer_ms", reporting.Ms(v.Transfer))
	l.int("streak", int64(v.Streak))
	l.float("interval_ms", reporting.Ms(v.Interval))
	var exp int64
	if !v.Expires.IsZero() {
		exp = v.Expires.UnixNano()
	}
	l.int("expires", exp)
	var since int64
	if !v.Since.IsZero() {
		since = v.Since.UnixNano()
	}
	l.int(FieldSince, since)
	l.str("artifact", v.Artifact)
	l.str("err", v.Err)
	l.str("url", v.URL)
	if v.Instance != "" {
		l.str(FieldInstance, v.Instance)
	}
	l.str(FieldVerdictJSON, encodeVerdictBlob(v))
	return l.end(v.At.UnixNano())
}

// FieldVerdictJSON holds the whole verdict (minus tags and time) as compact
// JSON with durations in integer nanoseconds. The Source reads this one field
// instead of pivoting ~20 typed fields: on InfluxDB 1.8 Flux handles every
// series × field as a table, and last() + pivot over 10,000 series takes
// tens of seconds where last() of one field takes well under one. Dashboards
// and rollups use the typed fields.
const FieldVerdictJSON = "verdict_json"

// FieldSince is the integer field holding when the verdict's pair entered
// its state (reporting.Verdict.Since), Unix ns like expires; 0 when not
// known, and absent from points written before it existed. It is for
// dashboards: vigil's own reader takes Since from FieldVerdictJSON, which
// older points carry it in too.
const FieldSince = "since"

// FieldInstance is the string field naming the canary instance that wrote
// a verdict (reporting.Verdict.Instance), absent from points written
// before it existed. It is a field, not a tag: the instance changes at
// every canary start, and as a tag each start would add a series per
// check × target. The duplicate-canary readers (Writers) read it.
const FieldInstance = "instance"

// verdictBlob is the FieldVerdictJSON form.
type verdictBlob struct {
	State    string   `json:"s"`
	OK       bool     `json:"ok"`
	Cause    string   `json:"c,omitempty"`
	Err      string   `json:"e,omitempty"`
	Status   int      `json:"sc,omitempty"`
	D        [7]int64 `json:"d"` // ttfb, duration, dns, connect, tls, transfer, interval (ns)
	Streak   int      `json:"st"`
	Expires  int64    `json:"x,omitempty"` // unix ns
	Artifact string   `json:"a,omitempty"`
	URL      string   `json:"u,omitempty"`
	Cert     int64    `json:"ce,omitempty"` // certificate NotAfter, unix ns
	Proto    string   `json:"p,omitempty"`
	Held     int64    `json:"h,omitempty"` // flap hold-down end, unix ns
	Instance string   `json:"i,omitempty"` // the canary instance that wrote it
	// Since is when the pair entered its state, unix ns; absent (0) in
	// points written before it existed, read as unknown (the zero time).
	Since int64 `json:"si,omitempty"`
}

func encodeVerdictBlob(v *reporting.Verdict) string {
	b := verdictBlob{State: string(v.State), OK: v.OK, Cause: v.Cause, Err: v.Err, Status: v.StatusCode,
		D:      [7]int64{int64(v.TTFB), int64(v.Duration), int64(v.DNS), int64(v.Connect), int64(v.TLS), int64(v.Transfer), int64(v.Interval)},
		Streak: v.Streak, Artifact: v.Artifact, URL: v.URL, Proto: v.Proto, Instance: v.Instance}
	if !v.Expires.IsZero() {
		b.Expires = v.Expires.UnixNano()
	}
	if !v.CertExpiry.IsZero() {
		b.Cert = v.CertExpiry.UnixNano()
	}
	if !v.HeldUntil.IsZero() {
		b.Held = v.HeldUntil.UnixNano()
	}
	if !v.Since.IsZero() {
		b.Since = v.Since.UnixNano()
	}
	out, _ := json.Marshal(b) // cannot fail: strings, ints and bools only
	return string(out)
}

// decodeVerdictBlob fills v's non-tag fields from the JSON form.
func decodeVerdictBlob(s string, v *reporting.Verdict) error {
	var b verdictBlob
	if err := json.Unmarshal([]byte(s), &b); err != nil {
		return err
	}
	v.State, v.OK, v.Cause, v.Err, v.StatusCode = reporting.State(b.State), b.OK, b.Cause, b.Err, b.Status
	v.TTFB, v.Duration, v.DNS = time.Duration(b.D[0]), time.Duration(b.D[1]), time.Duration(b.D[2])
	v.Connect, v.TLS, v.Transfer = time.Duration(b.D[3]), time.Duration(b.D[4]), time.Duration(b.D[5])
	v.Interval, v.Streak, v.Artifact, v.URL = time.Duration(b.D[6]), b.Streak, b.Artifact, b.URL
	v.Proto, v.Instance = b.Proto, b.Instance
	v.Expires, v.CertExpiry, v.HeldUntil, v.Since = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if b.Expires != 0 {
		v.Expires = time.Unix(0, b.Expires).UTC()
	}
	if b.Cert != 0 {
		v.CertExpiry = time.Unix(0, b.Cert).UTC()
	}
	if b.Held != 0 {
		v.HeldUntil = time.Unix(0, b.Held).UTC()
	}
	if b.Since != 0 {
		v.Since = time.Unix(0, b.Since).UTC()
	}
	return nil
}

func signalLine(l *lineBuilder, s *reporting.Signal) []byte {
	l.start(MeasurementSignal)
	l.tag("origin", s.Origin)
	l.tag("pool", s.Pool)
	l.tag("region", s.Region)
	l.tag("vantage", s.Vantage)
	l.float("window_ms", reporting.Ms(s.Window))
	l.int("requests", int64(s.Requests))
	l.int("status_5xx", int64(s.Status5xx))
	l.int("conn_errors", int64(s.ConnErrors))
	l.int("timeouts", int64(s.Timeouts))
	l.float("p95_ms", reporting.Ms(s.P95))
	l.bool("ejected", s.Ejected)
	l.str("reason", s.Reason)
	l.bool("out", s.Out)
	l.str("out_by", s.OutBy)
	return l.end(s.At.UnixNano())
}
