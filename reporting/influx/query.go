package influx

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/influxdata/influxdb-client-go/v2/api/query"

	"github.com/vigil-synthetics/vigil/reporting"
)

// Flux queries. They use only functions present in Flux 0.65 (InfluxDB 1.8):
// filters on _field come before any filter on _value, because 0.65 type-checks
// a predicate against every table and rejects `string == bool`.

// fluxString quotes s as a Flux string literal.
func fluxString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "${", `\${`)
	return `"` + r.Replace(s) + `"`
}

// fluxTime formats t as a Flux time literal.
func fluxTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (s *Store) from(start, stop time.Time) string {
	q := "from(bucket: " + fluxString(s.cfg.Bucket) + ") |> range(start: " + fluxTime(start)
	if !stop.IsZero() {
		q += ", stop: " + fluxTime(stop)
	}
	return q + ")"
}

// tagFilter is `and r.check == "x"…` for the non-empty fields of q.
func tagFilter(q reporting.HistoryQuery) string {
	var b strings.Builder
	for _, f := range []struct{ k, v string }{{"check", q.Check}, {"target", q.Target}, {"region", q.Region}} {
		if f.v != "" {
			b.WriteString(" and r." + f.k + " == " + fluxString(f.v))
		}
	}
	return b.String()
}

var epoch = time.Unix(0, 0).UTC()

// Verdicts returns the latest verdict per check × target × region × vantage
// whose At is within maxAge of now, before or after (0: any age, up to a
// day ahead), ordered by
// check, target, region, vantage. Verdicts dated ahead (a canary whose
// clock is fast) are returned too, as by the other sources, for the reader
// to weigh: a range ending at now would hide them until their time came,
// and then show them as fresh long after their canary stopped. Series two
// canary instances write at once carry Duplicates (markDuplicates). Flux:
//
//	from(bucket) |> range(start: now-maxAge, stop: now+maxAge)
//	  |> filter(fn: (r) => r._measurement == "vigil_verdict" and r._field == "verdict_json")
//	  |> last()
func (s *Store) Verdicts(ctx context.Context, maxAge time.Duration) ([]reporting.Verdict, error) {
	now := time.Now()
	start, stop := epoch, now.Add(24*time.Hour)
	if maxAge > 0 {
		start, stop = now.Add(-maxAge), now.Add(maxAge+time.Second)
	}
	q := s.from(start, stop) +
		` |> filter(fn: (r) => r._measurement == "` + MeasurementVerdict + `" and r._field == "` + FieldVerdictJSON + `")` +
		` |> last()`
	vs, err := s.verdictRows(ctx, q)
	if err != nil {
		return nil, s.readError("verdicts", err)
	}
	// A series whose tier changed is two InfluxDB series: keep the newest.
	latest := make(map[string]int, len(vs))
	out := vs[:0]
	for _, v := range vs {
		if i, ok := latest[v.Key()]; ok {
			if v.At.After(out[i].At) {
				out[i] = v
			}
			continue
		}
		latest[v.Key()] = len(out)
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return s.markDuplicates(out), nil
}

// History returns raw verdicts matching q, oldest first; with a Limit the
// newest Limit of them. Flux: range + filter(verdict_json, tags) + group()
// + sort(_time) [+ tail(n)]. A q.Runs filter reads the ok and cause fields
// too and keeps the runs of that outcome in InfluxDB, before tail(n):
//
//	… |> filter(fn: (r) => … and (r._field == "verdict_json" or r._field == "ok" or r._field == "cause") …)
//	  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
//	  |> filter(fn: (r) => r.ok == false [and cause …]) |> group() |> sort(columns: ["_time"]) [|> tail(n)]
func (s *Store) History(ctx context.Context, q reporting.HistoryQuery) ([]reporting.Verdict, error) {
	start, stop := bounds(q)
	var fq string
	if cond := fluxRunFilter(q.Runs); cond != "" {
		fq = s.from(start, stop) +
			` |> filter(fn: (r) => r._measurement == "` + MeasurementVerdict + `" and (r._field == "` + FieldVerdictJSON +
			`" or r._field == "ok" or r._field == "cause")` + tagFilter(q) + `)` +
			` |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")` +
			` |> filter(fn: (r) => ` + cond + `)` +
			` |> group() |> sort(columns: ["_time"])`
	} else {
		fq = s.from(start, stop) +
			` |> filter(fn: (r) => r._measurement == "` + MeasurementVerdict + `" and r._field == "` + FieldVerdictJSON + `"` + tagFilter(q) + `)` +
			` |> group() |> sort(columns: ["_time"])`
	}
	if q.Limit > 0 {
		fq += ` |> tail(n: ` + strconv.Itoa(q.Limit) + `)`
	}
	vs, err := s.verdictRows(ctx, fq)
	if err != nil {
		return nil, s.readError("history", err)
	}
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].At.Before(vs[j].At) })
	return vs, nil
}

// fluxRunFilter is the Flux predicate of a reporting.RunFilter over pivoted
// rows ("" for AllRuns).
func fluxRunFilter(f reporting.RunFilter) string {
	ttfb, dur := fluxString(reporting.CauseTTFB), fluxString(reporting.CauseDuration)
	switch f {
	case reporting.FailedRuns:
		return `r.ok == false`
	case reporting.DownRuns:
		return `r.ok == false and r.cause != ` + ttfb + ` and r.cause != ` + dur
	case reporting.SlowRuns:
		return `r.ok == false and (r.cause == ` + ttfb + ` or r.cause == ` + dur + `)`
	}
	return ""
}

// bounds turns q's window into a Flux range: start inclusive, stop
// exclusive (To + 1ns; To zero: now).
func bounds(q reporting.HistoryQuery) (start, stop time.Time) {
	start = epoch
	if !q.From.IsZero() {
		start = q.From
	}
	stop = time.Now()
	if !q.To.IsZero() {
		stop = q.To
	}
	return start, stop.Add(time.Nanosecond)
}

// Rollups returns per-minute rollups by check × target × region (vantages
// merged), ordered by minute, check, target, region; with a Limit the newest
// Limit rows. TTFBP95 is the exact nearest-rank p95 of the minute's TTFB
// samples (reporting.Verdict.TTFBSample: runs with a TTFB, and runs that
// timed out before their first byte, ranked above them at their wait).
//
// Failed counts the runs that were reporting.Verdict.Unavailable: ok false
// and a cause other than ttfb or duration. Runs the agent could not make
// (reporting.Verdict.AgentFault) are not counted at all. Rollups are computed from the
// raw points at every query, so this holds for points written by earlier
// versions too.
//
// Flux selects the five fields a rollup needs and the minutes are summed
// here, in one pass over the records:
//
//	from(bucket) |> range(start: From (minute), stop: To + 1ns)
//	  |> filter(fn: (r) => r._measurement == "vigil_verdict" and
//	       (r._field == "ttfb_ms" or r._field == "duration_ms" or r._field == "ok" or r._field == "cause" or r._field == "state") and r.check == …)
//
// aggregateWindow(every: 1m) would do the sums in InfluxDB, but on 1.8 it
// costs a table per window: 3.1 s for one count over 24 h of one check in
// three regions, against 12 ms to read those raw points.
func (s *Store) Rollups(ctx context.Context, q reporting.HistoryQuery) ([]reporting.Rollup, error) {
	start, stop := bounds(q)
	start = start.Truncate(time.Minute)
	fq := s.from(start, stop) +
		` |> filter(fn: (r) => r._measurement == "` + MeasurementVerdict + `" and` +
		` (r._field == "ttfb_ms" or r._field == "duration_ms" or r._field == "ok" or r._field == "cause" or r._field == "state")` + tagFilter(q) + `)`

	type key struct {
		check, target, region string
		minute                int64
	}
	type acc struct {
		r              reporting.Rollup
		samples, waits []time.Duration
	}
	accs := map[key]*acc{}
	// A run's fields arrive as separate records; runs pairs them by series
	// (vantage included) and time, so a run the agent could not make
	// (reporting.Verdict.AgentFault) is left out whole.
	type run struct {
		k         key
		notOK     bool
		cause     string
		ttfb, dur time.Duration
		hasTTFB   bool
		unhealthy bool
	}
	type runKey struct {
		series string
		at     int64
	}
	runs := map[runKey]*run{}
	err := s.each(ctx, fq, func(rec *query.FluxRecord) error {
		t := rec.Time().UTC().Truncate(time.Minute)
		k := key{str(rec, "check"), str(rec, "target"), str(rec, "region"), t.UnixNano()}
		rk := runKey{k.check + "\x00" + k.target + "\x00" + k.region + "\x00" + str(rec, "vantage"), rec.Time().UnixNano()}
		ru := runs[rk]
		if ru == nil {
			ru = &run{k: k}
			runs[rk] = ru
		}
		switch rec.Field() {
		case "ttfb_ms":
			ru.ttfb, ru.hasTTFB = fromMs(num(rec.Value())), true
		case "duration_ms":
			ru.dur = fromMs(num(rec.Value()))
		case "ok":
			ok, isBool := rec.Value().(bool)
			ru.notOK = isBool && !ok
		case "cause":
			ru.cause = str(rec, "_value")
		case "state":
			st, _ := rec.Value().(string)
			ru.unhealthy = st == string(reporting.StateUnhealthy)
		}
		return nil
	})
	if err != nil {
		return nil, s.readError("rollups", err)
	}
	for _, ru := range runs {
		v := reporting.Verdict{OK: !ru.notOK, Cause: ru.cause, TTFB: ru.ttfb, Duration: ru.dur}
		if v.AgentFault() {
			continue
		}
		a := accs[ru.k]
		if a == nil {
			t := time.Unix(0, ru.k.minute).UTC()
			a = &acc{r: reporting.Rollup{Check: ru.k.check, Target: ru.k.target, Region: ru.k.region, Minute: t}}
			accs[ru.k] = a
		}
		if ru.hasTTFB {
			a.r.Total++
			// Only TTFB samples enter the TTFB figures: runs with a
			// TTFB, and runs that timed out before their first byte
			// (ranked above them); other failed runs (TTFB 0) not at all.
			switch d, timedOut, ok := v.TTFBSample(); {
			case ok && timedOut:
				a.r.TTFBTimeouts++
				a.waits = append(a.waits, d)
			case ok:
				a.r.TTFBRuns++
				a.r.TTFBSum += d
				a.r.TTFBMax = max(a.r.TTFBMax, d)
				a.samples = append(a.samples, d)
			}
		}
		if ru.unhealthy {
			a.r.Unhealthy++
		}
		if v.Unavailable() {
			a.r.Failed++
		}
	}
	out := make([]reporting.Rollup, 0, len(accs))
	for _, a := range accs {
		if a.r.Total == 0 {
			continue
		}
		a.r.TTFBP95 = reporting.TTFBPercentileOf(a.samples, a.waits, 0.95).D
		out = append(out, a.r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.Minute.Equal(b.Minute) {
			return a.Minute.Before(b.Minute)
		}
		if a.Check != b.Check {
			return a.Check < b.Check
		}
		if a.Target != b.Target {
			return a.Target < b.Target
		}
		return a.Region < b.Region
	})
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[len(out)-q.Limit:]
	}
	return out, nil
}

// Signals returns the signals with At after since, oldest first.
func (s *Store) Signals(ctx context.Context, since time.Time) ([]reporting.Signal, error) {
	start := epoch
	if !since.IsZero() {
		start = since.Add(time.Nanosecond)
	}
	q := s.from(start, time.Time{}) +
		` |> filter(fn: (r) => r._measurement == "` + MeasurementSignal + `")` +
		` |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")` +
		` |> group() |> sort(columns: ["_time"])`
	var out []reporting.Signal
	err := s.each(ctx, q, func(rec *query.FluxRecord) error {
		out = append(out, reporting.Signal{
			Pool: str(rec, "pool"), Origin: str(rec, "origin"), Region: str(rec, "region"), Vantage: str(rec, "vantage"),
			At: rec.Time().UTC(), Window: fromMs(num(rec.ValueByKey("window_ms"))),
			Requests: int(num(rec.ValueByKey("requests"))), Status5xx: int(num(rec.ValueByKey("status_5xx"))),
			ConnErrors: int(num(rec.ValueByKey("conn_errors"))), Timeouts: int(num(rec.ValueByKey("timeouts"))),
			P95: fromMs(num(rec.ValueByKey("p95_ms"))), Ejected: boolean(rec.ValueByKey("ejected")),
			Reason: str(rec, "reason"), Out: boolean(rec.ValueByKey("out")), OutBy: str(rec, "out_by"),
		})
		return nil
	})
	if err != nil {
		return nil, s.readError("signals", err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, nil
}

// readError is a failed read's error as every caller gets it: "influx:
// WHAT: " and the error, explained (ExplainError) when InfluxDB's answer
// points at a store.influxdb key, so that the proxy's verdict poll, the
// passive triggers' signal reads, the alerter and the status page all
// name the key to fix, as the write path does.
func (s *Store) readError(what string, err error) error {
	return fmt.Errorf("influx: %s: %w", what, s.ExplainError(err))
}

func (s *Store) verdictRows(ctx context.Context, q string) ([]reporting.Verdict, error) {
	var out []reporting.Verdict
	err := s.each(ctx, q, func(rec *query.FluxRecord) error {
		v := reporting.Verdict{
			Check: str(rec, "check"), Target: str(rec, "target"), Tier: str(rec, "tier"),
			Region: str(rec, "region"), Vantage: str(rec, "vantage"), At: rec.Time().UTC(),
		}
		blob, ok := rec.Value().(string)
		if !ok { // a pivoted row (History with a q.Runs filter)
			blob, _ = rec.ValueByKey(FieldVerdictJSON).(string)
		}
		if err := decodeVerdictBlob(blob, &v); err != nil {
			return fmt.Errorf("%s at %s: %w", FieldVerdictJSON, v.At.Format(time.RFC3339Nano), err)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// each runs a Flux query and calls fn for every record.
func (s *Store) each(ctx context.Context, q string, fn func(*query.FluxRecord) error) (err error) {
	if s.closed.Load() {
		return ErrClosed
	}
	caller := ctx
	defer func() {
		err = oneLine(s.scrub(err))
		// A caller that went away says nothing about InfluxDB.
		if err == nil || caller.Err() == nil {
			s.reads.Record(err)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	// A QueryAPI per query: the library's QueryAPI caches its URL without a
	// lock, so one shared by the proxy, alerter and status page races.
	res, err := s.client.QueryAPI(s.cfg.Org).Query(ctx, q)
	if err != nil {
		return err
	}
	defer res.Close()
	for res.Next() {
		if err := fn(res.Record()); err != nil {
			return err
		}
	}
	return res.Err()
}

func str(rec *query.FluxRecord, k string) string {
	v, _ := rec.ValueByKey(k).(string)
	return v
}

func boolean(v any) bool {
	b, _ := v.(bool)
	return b
}

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	}
	return 0
}

// fromMs converts float milliseconds to a duration, rounded to the
// nanosecond (reporting.FromMs truncates, which turns 42.25 ms stored as a
// float into 42249999 ns).
func fromMs(ms float64) time.Duration { return time.Duration(math.Round(ms * 1e6)) }
