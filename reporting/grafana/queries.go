package grafana

// Flux texts of every panel, variable and alert rule. They use Grafana's
// Flux variables (v.timeRangeStart, v.timeRangeStop, v.windowPeriod) and
// the dashboard variables ${bucket}, ${region:regex} and ${check}; they
// stick to functions Flux 0.65 (InfluxDB 1.8) already has, so they run on
// 1.8 and on 2.x alike.
//
// Severity is the number the state panels map back to text and colour:
// 0 healthy, 1 degraded, 2 unknown (never reported, or expired), 3 unhealthy.
// Worst wins when several targets or vantages share a cell.

const (
	fromVerdicts = `from(bucket: "${bucket}")
  |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
  |> filter(fn: (r) => r._measurement == "vigil_verdict")`
	fromSignals = `from(bucket: "${bucket}")
  |> range(start: v.timeRangeStart, stop: v.timeRangeStop)
  |> filter(fn: (r) => r._measurement == "vigil_signal")`
	byRegion = `
  |> filter(fn: (r) => r.region =~ /^${region:regex}$/)`
	byCheck = `
  |> filter(fn: (r) => r.check == "${check}")`

	// availableRun is true for a run that counts as available: it passed,
	// or it failed only a latency objective (cause ttfb or duration; "slow
	// is not down", as in the store's rollups and the alerter). ok and cause
	// are paired by a pivot on the run's time.
	availableRun = `(exists r.ok and r.ok) or (exists r.cause and (r.cause == "ttfb" or r.cause == "duration"))`
	// ttfbSamples keeps, of the verdict rows before it, one row per TTFB
	// sample as vigil counts them (reporting.Verdict.TTFBSample, README
	// "Which runs count in TTFB figures"), its _value: the run's TTFB, or
	// for a run that timed out before its first byte (cause timeout, no
	// TTFB) how long it waited, duration_ms, which is at least the check's
	// timeout and so above every TTFB it could have measured. Runs without
	// a first byte for another cause (DNS, refused, TLS…) and those the
	// agent could not make (cause agent, browser_unavailable) are no sample.
	// Fields are paired by a pivot on the run's time.
	ttfbSamples = `
  |> filter(fn: (r) => r._field == "ttfb_ms" or r._field == "duration_ms" or r._field == "cause" or r._field == "ok")
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> filter(fn: (r) => not (exists r.ok and not r.ok and exists r.cause and (r.cause == "agent" or r.cause == "browser_unavailable"))
      and ((exists r.ttfb_ms and r.ttfb_ms > 0.0) or (exists r.cause and r.cause == "timeout" and not (exists r.ok and r.ok))))
  |> map(fn: (r) => ({r with _value: if exists r.ttfb_ms and r.ttfb_ms > 0.0 then r.ttfb_ms
      else if exists r.duration_ms and r.duration_ms > 0.0 then r.duration_ms else 0.000001}))
  |> keep(columns: ["_start", "_stop", "_time", "_value", "check", "target", "tier", "region", "vantage"])`
	// severityOfState maps the string state field to its severity.
	severityOfState = `if r._value == "unhealthy" then 3
      else if r._value == "degraded" then 1
      else if r._value == "healthy" then 0
      else 2`
)

// Variable queries: distinct tag values over the last 7 days (not the
// dashboard range, so a quiet check still shows up). last() before keep()
// keeps one row per series and works around InfluxDB 1.8 returning no rows
// for keep() of tag columns pushed down to storage.
const (
	qVarRegionVerdict = `from(bucket: "${bucket}")
  |> range(start: -7d)
  |> filter(fn: (r) => r._measurement == "vigil_verdict" and r._field == "ok")
  |> last()
  |> keep(columns: ["region"])
  |> group()
  |> distinct(column: "region")
  |> sort()`
	qVarRegionSignal = `from(bucket: "${bucket}")
  |> range(start: -7d)
  |> filter(fn: (r) => r._measurement == "vigil_signal" and r._field == "requests")
  |> last()
  |> keep(columns: ["region"])
  |> group()
  |> distinct(column: "region")
  |> sort()`
	qVarCheck = `from(bucket: "${bucket}")
  |> range(start: -7d)
  |> filter(fn: (r) => r._measurement == "vigil_verdict" and r._field == "ok")
  |> last()
  |> keep(columns: ["check"])
  |> group()
  |> distinct(column: "check")
  |> sort()`
)

// Overview dashboard.
const (
	// qMatrix: one row per check, one column per region, the worst latest
	// severity among the check's targets and vantages in that region. A
	// verdict past its expires time at the end of the range counts as unknown.
	qMatrix = fromVerdicts + byRegion + `
  |> filter(fn: (r) => r._field == "state" or r._field == "expires")
  |> last()
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> map(fn: (r) => ({r with severity:
      if exists r.expires and r.expires > 0 and time(v: r.expires) < v.timeRangeStop then 2
      else if r.state == "unhealthy" then 3
      else if r.state == "degraded" then 1
      else if r.state == "healthy" then 0
      else 2}))
  |> group(columns: ["check", "region"])
  |> max(column: "severity")
  |> group()
  |> keep(columns: ["check", "region", "severity"])
  |> pivot(rowKey: ["check"], columnKey: ["region"], valueColumn: "severity")
  |> sort(columns: ["check"])`

	// qAvailability: share of passing runs per check over the range, in %.
	qAvailability = fromVerdicts + byRegion + `
  |> filter(fn: (r) => r._field == "ok" or r._field == "cause")
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> map(fn: (r) => ({r with _value: if ` + availableRun + ` then 100.0 else 0.0}))
  |> group(columns: ["check"])
  |> mean()
  |> keep(columns: ["check", "_value"])`

	// qStateHistory: worst severity per check × region and window.
	qStateHistory = fromVerdicts + byRegion + `
  |> filter(fn: (r) => r._field == "state")
  |> map(fn: (r) => ({r with _value: ` + severityOfState + `}))
  |> keep(columns: ["_start", "_stop", "_time", "_value", "check", "region"])
  |> group(columns: ["check", "region"])
  |> aggregateWindow(every: v.windowPeriod, fn: max, createEmpty: false)`

	// qTTFBByCheck: TTFB p95 per check across the selected regions (runs
	// timed out before their first byte counted, see ttfbSamples).
	qTTFBByCheck = fromVerdicts + byRegion + ttfbSamples + `
  |> group(columns: ["check"])
  |> aggregateWindow(every: v.windowPeriod, fn: (column, tables=<-) => tables |> quantile(q: 0.95, column: column, method: "estimate_tdigest"), createEmpty: false)`
)

// Per-check dashboard.
const (
	// qTTFBQuantile is completed with the quantile (0.5, 0.95); runs timed
	// out before their first byte count (see ttfbSamples).
	qTTFBQuantile = fromVerdicts + byCheck + byRegion + ttfbSamples + `
  |> group(columns: ["region"])
  |> aggregateWindow(every: v.windowPeriod, fn: (column, tables=<-) => tables |> quantile(q: %s, column: column, method: "estimate_tdigest"), createEmpty: false)`

	// qPhases: mean phase durations per window. TTFB counts from the start
	// of the run, so the server's own time ("wait") is TTFB minus DNS,
	// connect and TLS; the five series stack up to TTFB + transfer.
	qPhases = fromVerdicts + byCheck + byRegion + `
  |> filter(fn: (r) => r._field == "dns_ms" or r._field == "connect_ms" or r._field == "tls_ms" or r._field == "ttfb_ms" or r._field == "transfer_ms")
  |> group(columns: ["_field"])
  |> aggregateWindow(every: v.windowPeriod, fn: mean, createEmpty: false)
  |> group()
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> map(fn: (r) => ({
      _time: r._time,
      dns: r.dns_ms,
      connect: r.connect_ms,
      tls: r.tls_ms,
      wait: if r.ttfb_ms - r.dns_ms - r.connect_ms - r.tls_ms > 0.0 then r.ttfb_ms - r.dns_ms - r.connect_ms - r.tls_ms else 0.0,
      transfer: r.transfer_ms}))`

	// qFailuresByCause: failed runs per cause over the range, slow runs
	// (failed only a ttfb or duration objective: available) left out, as
	// slow is not down.
	qFailuresByCause = fromVerdicts + byCheck + byRegion + `
  |> filter(fn: (r) => r._field == "cause" and r._value != "" and r._value != "ttfb" and r._value != "duration")
  |> duplicate(column: "_value", as: "cause")
  |> group(columns: ["cause"])
  |> count()
  |> group()
  |> keep(columns: ["cause", "_value"])
  |> rename(columns: {_value: "failures"})
  |> sort(columns: ["failures"], desc: true)`

	// qRecentFailures: the last 100 failed runs, newest first; slow runs
	// are in qRecentSlow.
	qRecentFailures = recentRunsHead + `r.ok == false and r.cause != "ttfb" and r.cause != "duration"` + recentRunsTail

	// qRecentSlow: the last 100 slow runs (failed only a ttfb or duration
	// objective), newest first.
	qRecentSlow = recentRunsHead + `r.ok == false and (r.cause == "ttfb" or r.cause == "duration")` + recentRunsTail

	// recentRunsHead + a Flux predicate over the pivoted run r +
	// recentRunsTail: the last 100 runs of the range that match, newest
	// first.
	recentRunsHead = fromVerdicts + byCheck + byRegion + `
  |> filter(fn: (r) => r._field == "ok" or r._field == "state" or r._field == "cause" or r._field == "err" or r._field == "status_code" or r._field == "ttfb_ms" or r._field == "url" or r._field == "artifact")
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> filter(fn: (r) => `
	recentRunsTail = `)
  |> group()
  |> keep(columns: ["_time", "region", "target", "vantage", "state", "cause", "status_code", "ttfb_ms", "err", "url", "artifact"])
  |> sort(columns: ["_time"], desc: true)
  |> limit(n: 100)`

	// qCheckStates: worst severity per target × region and window.
	qCheckStates = fromVerdicts + byCheck + byRegion + `
  |> filter(fn: (r) => r._field == "state")
  |> map(fn: (r) => ({r with _value: ` + severityOfState + `}))
  |> keep(columns: ["_start", "_stop", "_time", "_value", "target", "region"])
  |> group(columns: ["target", "region"])
  |> aggregateWindow(every: v.windowPeriod, fn: max, createEmpty: false)`

	// qCurrentState: per target × region × vantage, the latest verdict's
	// state as of the end of the range (past its expires: unknown) and
	// since when its pair has been in it, as numbers Grafana sorts and
	// formats: since, Unix milliseconds (the panel's unit dateTimeAsIso),
	// and for, whole seconds from since to the end of the range (unit
	// dtdurations); both null (an empty cell) when not known, for only
	// when since is after the end of the range. since is the since field
	// (Unix ns, as reporting/influx writes it; 0: the verdict did not
	// know it) of the state's point; a point written before that field
	// existed carries it only in verdict_json ("si", Unix ns, a key after a
	// comma, as qAlertCert reads "ce"), which is read then, as vigil's own
	// reader does. A point of another time (an older field, the state's
	// newer) says nothing. A verdict read unknown for its expiry is unknown
	// since its expires, as vigil's API says. Of two series of a pair (its
	// tier changed), each field's newest point counts. Worst first, then
	// by target, region and vantage. The fields are read apart and folded
	// in by reduce, not pivoted: a pivot without since (no point in the
	// range has it) has no such column, which Flux refuses to read. The
	// nulls are made by the last pivot (Flux 0.65 has no null literal):
	// rank, since and for are rows of their own, since and for only where
	// known, and two padding rows (target "", dropped after the pivot)
	// give the since and for columns even when no row knows them.
	qCurrentState = `import "regexp"
import "strings"
latest = ` + fromVerdicts + byCheck + byRegion + `
  |> filter(fn: (r) => r._field == "state" or r._field == "expires" or r._field == "since" or r._field == "verdict_json")
  |> last()
states = latest
  |> filter(fn: (r) => r._field == "state")
  |> map(fn: (r) => ({target: r.target, region: r.region, vantage: r.vantage, f: "state", s: r._value, n: 0, t: int(v: r._time)}))
nums = latest
  |> filter(fn: (r) => r._field == "expires" or r._field == "since")
  |> map(fn: (r) => ({target: r.target, region: r.region, vantage: r.vantage, f: r._field, s: "", n: r._value, t: int(v: r._time)}))
blobs = latest
  |> filter(fn: (r) => r._field == "verdict_json")
  |> map(fn: (r) => ({target: r.target, region: r.region, vantage: r.vantage, f: "si", s: "",
      n: strings.trimPrefix(v: regexp.findString(r: /,"si":[0-9]+/, v: r._value), prefix: ",\"si\":"), t: int(v: r._time)}))
  |> map(fn: (r) => ({r with n: if r.n == "" then 0 else int(v: r.n)}))
rows = union(tables: [states, nums, blobs])
  |> group(columns: ["target", "region", "vantage"])
  |> reduce(identity: {state: "", st: 0, expires: 0, et: 0, since: 0, sit: 0, si: 0, sjt: 0},
      fn: (r, accumulator) => ({
        state: if r.f == "state" and r.t > accumulator.st then r.s else accumulator.state,
        st: if r.f == "state" and r.t > accumulator.st then r.t else accumulator.st,
        expires: if r.f == "expires" and r.t > accumulator.et then r.n else accumulator.expires,
        et: if r.f == "expires" and r.t > accumulator.et then r.t else accumulator.et,
        since: if r.f == "since" and r.t > accumulator.sit then r.n else accumulator.since,
        sit: if r.f == "since" and r.t > accumulator.sit then r.t else accumulator.sit,
        si: if r.f == "si" and r.t > accumulator.sjt then r.n else accumulator.si,
        sjt: if r.f == "si" and r.t > accumulator.sjt then r.t else accumulator.sjt}))
  |> filter(fn: (r) => r.state != "")
  |> map(fn: (r) => ({r with expired: r.expires > 0 and r.et == r.st and r.expires < int(v: v.timeRangeStop)}))
  |> map(fn: (r) => ({target: r.target, region: r.region, vantage: r.vantage,
      state: if r.expired then "unknown" else r.state,
      since: if r.expired then r.expires else if r.sit == r.st then r.since else if r.sjt == r.st then r.si else 0}))
  |> map(fn: (r) => ({r with rank: if r.state == "unhealthy" then 0 else if r.state == "unknown" then 1 else if r.state == "degraded" then 2 else 3}))
  |> group()
ranks = rows
  |> map(fn: (r) => ({target: r.target, region: r.region, vantage: r.vantage, state: r.state, kind: "rank", _value: r.rank}))
sinces = rows
  |> filter(fn: (r) => r.since > 0)
  |> map(fn: (r) => ({target: r.target, region: r.region, vantage: r.vantage, state: r.state, kind: "since", _value: r.since / 1000000}))
fors = rows
  |> filter(fn: (r) => r.since > 0 and r.since <= int(v: v.timeRangeStop))
  |> map(fn: (r) => ({target: r.target, region: r.region, vantage: r.vantage, state: r.state, kind: "for",
      _value: (int(v: v.timeRangeStop) - r.since) / 1000000000}))
padSince = rows
  |> limit(n: 1)
  |> map(fn: (r) => ({target: "", region: "", vantage: "", state: "", kind: "since", _value: 0}))
padFor = rows
  |> limit(n: 1)
  |> map(fn: (r) => ({target: "", region: "", vantage: "", state: "", kind: "for", _value: 0}))
union(tables: [ranks, sinces, fors, padSince, padFor])
  |> group()
  |> pivot(rowKey: ["target", "region", "vantage", "state"], columnKey: ["kind"], valueColumn: "_value")
  |> filter(fn: (r) => r.target != "")
  |> sort(columns: ["rank", "target", "region", "vantage"])
  |> keep(columns: ["target", "region", "vantage", "state", "since", "for"])`

	// qCheckAvailability: share of passing runs per region, in %.
	qCheckAvailability = fromVerdicts + byCheck + byRegion + `
  |> filter(fn: (r) => r._field == "ok" or r._field == "cause")
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> map(fn: (r) => ({r with _value: if ` + availableRun + ` then 100.0 else 0.0}))
  |> group(columns: ["region"])
  |> mean()
  |> keep(columns: ["region", "_value"])`
)

// Proxy dashboard.
const (
	// qSignalSum is completed with a field name: its sum per origin and
	// window across pools and proxy instances.
	qSignalSum = fromSignals + byRegion + `
  |> filter(fn: (r) => r._field == "%s")
  |> keep(columns: ["_start", "_stop", "_time", "_value", "origin"])
  |> group(columns: ["origin"])
  |> aggregateWindow(every: v.windowPeriod, fn: sum, createEmpty: false)`

	// qErrorRate: (5xx + connection errors + timeouts) / requests per
	// origin and window, in %; null (a gap) in a window whose signals
	// counted no request for the origin (out of rotation, or idle), not
	// 0 %: nothing went through it, so nothing says it is healthy.
	qErrorRate = `windows = ` + fromSignals + byRegion + `
  |> filter(fn: (r) => r._field == "requests" or r._field == "status_5xx" or r._field == "conn_errors" or r._field == "timeouts")
  |> group(columns: ["origin", "_field"])
  |> aggregateWindow(every: v.windowPeriod, fn: sum, createEmpty: false)
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
served = windows
  |> filter(fn: (r) => r.requests > 0)
  |> map(fn: (r) => ({_time: r._time, origin: r.origin, kind: "_value",
      _value: 100.0 * float(v: r.status_5xx + r.conn_errors + r.timeouts) / float(v: r.requests)}))
idle = windows
  |> map(fn: (r) => ({_time: r._time, origin: r.origin, kind: "requests", _value: float(v: r.requests)}))` + nullWhenIdle

	// qSignalP95: the worst proxy-observed p95 per origin and window among
	// the signals that counted requests; null (a gap) in a window whose
	// signals counted none for the origin: a signal's p95_ms is 0 when no
	// request went through, which is no latency, not 0 ms.
	qSignalP95 = `points = ` + fromSignals + byRegion + `
  |> filter(fn: (r) => r._field == "requests" or r._field == "p95_ms")
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
served = points
  |> filter(fn: (r) => r.requests > 0)
  |> map(fn: (r) => ({_start: r._start, _stop: r._stop, _time: r._time, origin: r.origin, _value: r.p95_ms}))
  |> group(columns: ["origin"])
  |> aggregateWindow(every: v.windowPeriod, fn: max, createEmpty: false)
  |> map(fn: (r) => ({_time: r._time, origin: r.origin, kind: "_value", _value: r._value}))
idle = points
  |> map(fn: (r) => ({_start: r._start, _stop: r._stop, _time: r._time, origin: r.origin, _value: float(v: r.requests)}))
  |> group(columns: ["origin"])
  |> aggregateWindow(every: v.windowPeriod, fn: sum, createEmpty: false)
  |> map(fn: (r) => ({_time: r._time, origin: r.origin, kind: "requests", _value: r._value}))` + nullWhenIdle

	// nullWhenIdle ends qErrorRate and qSignalP95: served holds the value
	// of each window with requests (kind "_value"), idle the requests of
	// every window with signals (kind "requests"). Pivoted together in one
	// table, a window without a served row gets a null _value, and every
	// origin's table has the _value column even when nothing went through
	// it over the whole range. (Flux 0.65 has no null literal; union and
	// pivot, not join, as join of two branches of one stream returns
	// nothing on InfluxDB 1.8.)
	nullWhenIdle = `
union(tables: [idle, served])
  |> group()
  |> pivot(rowKey: ["_time", "origin"], columnKey: ["kind"], valueColumn: "_value")
  |> group(columns: ["origin"])
  |> keep(columns: ["_time", "origin", "_value"])
  |> sort(columns: ["_time"])`

	// qEjected: 1 while a proxy instance had the origin out of rotation
	// for any reason (passive ejection, verdicts, drain: the out field),
	// else 0. ejected (passive only) is read too, for signals written
	// before out existed.
	qEjected = fromSignals + byRegion + `
  |> filter(fn: (r) => r._field == "out" or r._field == "ejected")
  |> map(fn: (r) => ({r with _value: if r._value then 1 else 0}))
  |> keep(columns: ["_start", "_stop", "_time", "_value", "origin", "vantage"])
  |> group(columns: ["origin", "vantage"])
  |> aggregateWindow(every: v.windowPeriod, fn: max, createEmpty: false)`
)

// Alert rule queries. Grafana evaluates them over each query's relative
// time range (v.timeRangeStart/Stop); the bucket is fixed at generation.
const (
	// qAlertRegionsDown: per check × target (and its tier, a label as in
	// the Prometheus rules' VigilCheckDown), the number of regions whose
	// latest unexpired verdict is unhealthy.
	qAlertRegionsDown = fromVerdicts + `
  |> filter(fn: (r) => r._field == "state" or r._field == "expires")
  |> last()
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> filter(fn: (r) => r.state == "unhealthy" and (not exists r.expires or r.expires == 0 or time(v: r.expires) >= v.timeRangeStop))
  |> group(columns: ["check", "target", "tier", "region"])
  |> first(column: "state")
  |> group(columns: ["check", "target", "tier"])
  |> count(column: "state")
  |> map(fn: (r) => ({_time: v.timeRangeStop, check: r.check, target: r.target, tier: r.tier, _value: float(v: r.state)}))`

	// qAlertDownDetail says which regions qAlertRegionsDown counts and
	// why, for the origin-down rule's annotations, as vigil's alerter
	// describes its down alerts: per check × target (and tier), one row
	// whose labels are regions (the unhealthy regions, sorted,
	// comma-separated), cause (the most common cause among them, one
	// vantage per region, the first by name; ties to the alphabetically
	// first) and error (the first region's failure text with that cause),
	// and whose value is the number of regions. Its labels are not the
	// alert's: a reduce of it is matched to the alert's series by Grafana
	// (a superset of its labels) and read as $values.E.Labels. Each
	// part is a row of kind regions, cause or error, folded by reduce
	// (union and reduce, not join, as on InfluxDB 1.8); a pair without a
	// cause gets cause and error "". The cause and err fields are read
	// apart from state and expires and folded in per vantage, not
	// pivoted: a pivot without them (no verdict in the range failed with
	// a cause) has no such column, which Flux refuses to read.
	qAlertDownDetail = `latest = ` + fromVerdicts + `
  |> filter(fn: (r) => r._field == "state" or r._field == "expires" or r._field == "cause" or r._field == "err")
  |> last()
live = latest
  |> filter(fn: (r) => r._field == "state" or r._field == "expires")
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> filter(fn: (r) => r.state == "unhealthy" and (not exists r.expires or r.expires == 0 or time(v: r.expires) >= v.timeRangeStop))
  |> map(fn: (r) => ({check: r.check, target: r.target, tier: r.tier, region: r.region, vantage: r.vantage, f: "live", s: ""}))
texts = latest
  |> filter(fn: (r) => r._field == "cause" or r._field == "err")
  |> map(fn: (r) => ({check: r.check, target: r.target, tier: r.tier, region: r.region, vantage: r.vantage, f: r._field, s: r._value}))
unhealthy = union(tables: [live, texts])
  |> group(columns: ["check", "target", "tier", "region", "vantage"])
  |> reduce(identity: {live: 0.0, cause: "", err: ""}, fn: (r, accumulator) => ({
      live: if r.f == "live" then 1.0 else accumulator.live,
      cause: if r.f == "cause" then r.s else accumulator.cause,
      err: if r.f == "err" then r.s else accumulator.err}))
  |> filter(fn: (r) => r.live > 0.0)
  |> group(columns: ["check", "target", "tier", "region"])
  |> sort(columns: ["vantage"])
  |> first(column: "region")
  |> group(columns: ["check", "target", "tier"])
regions = unhealthy
  |> sort(columns: ["region"])
  |> reduce(identity: {n: 0.0, s: ""}, fn: (r, accumulator) => ({n: accumulator.n + 1.0,
      s: if accumulator.s == "" then r.region else accumulator.s + "," + r.region}))
  |> map(fn: (r) => ({check: r.check, target: r.target, tier: r.tier, kind: "regions", n: r.n, s: r.s}))
causes = unhealthy
  |> filter(fn: (r) => r.cause != "")
  |> group(columns: ["check", "target", "tier", "cause"])
  |> sort(columns: ["region"])
  |> reduce(identity: {n: 0.0, err: ""}, fn: (r, accumulator) => ({n: accumulator.n + 1.0,
      err: if accumulator.err == "" then r.err else accumulator.err}))
  |> group(columns: ["check", "target", "tier"])
  |> sort(columns: ["cause"])
  |> max(column: "n")
cause = causes
  |> map(fn: (r) => ({check: r.check, target: r.target, tier: r.tier, kind: "cause", n: 0.0, s: r.cause}))
errs = causes
  |> map(fn: (r) => ({check: r.check, target: r.target, tier: r.tier, kind: "error", n: 0.0, s: r.err}))
union(tables: [regions, cause, errs])
  |> group(columns: ["check", "target", "tier"])
  |> reduce(identity: {n: 0.0, regions: "", cause: "", error: ""}, fn: (r, accumulator) => ({
      n: if r.kind == "regions" then r.n else accumulator.n,
      regions: if r.kind == "regions" then r.s else accumulator.regions,
      cause: if r.kind == "cause" then r.s else accumulator.cause,
      error: if r.kind == "error" then r.s else accumulator.error}))
  |> map(fn: (r) => ({_time: v.timeRangeStop, check: r.check, target: r.target, tier: r.tier,
      regions: r.regions, cause: r.cause, error: r.error, _value: r.n}))
  |> group(columns: ["check", "target", "tier", "regions", "cause", "error"])`

	// qAlertCert is completed by certQuery ({horizon_ns}:
	// cert_expiry_days in nanoseconds): per check × target (and its tier,
	// as the Prometheus rules' VigilCertificate), the number of regions
	// where a vantage's latest unexpired verdict reports a certificate
	// expiring within the horizon or failed with cause cert, as the
	// alerter's cert_expiry rule. The certificate's expiry is only in the
	// verdict's JSON field (reporting/influx: "ce", Unix ns, beside "ok",
	// "c" the cause and "x" the verdict's expiry), so all four are read
	// from it with regular expressions, each key after a comma: never from
	// inside a string value, whose quotes are escaped. A pair with
	// verdicts and no agreeing region says 0.
	qAlertCert = `import "regexp"
import "strings"
` + fromVerdicts + `
  |> filter(fn: (r) => r._field == "verdict_json")
  |> last()
  |> map(fn: (r) => ({check: r.check, target: r.target, tier: r.tier, region: r.region,
      ce: strings.trimPrefix(v: regexp.findString(r: /,"ce":[0-9]+/, v: r._value), prefix: ",\"ce\":"),
      x: strings.trimPrefix(v: regexp.findString(r: /,"x":[0-9]+/, v: r._value), prefix: ",\"x\":"),
      failed: regexp.matchRegexpString(r: /,"ok":false[,}]/, v: r._value) and regexp.matchRegexpString(r: /,"c":"cert"[,}]/, v: r._value)}))
  |> map(fn: (r) => ({check: r.check, target: r.target, tier: r.tier, region: r.region,
      agree: if (r.x == "" or int(v: r.x) >= int(v: v.timeRangeStop))
        and (r.failed or (r.ce != "" and int(v: r.ce) < int(v: v.timeRangeStop) + {horizon_ns})) then 1.0 else 0.0}))
  |> group(columns: ["check", "target", "tier", "region"])
  |> max(column: "agree")
  |> group(columns: ["check", "target", "tier"])
  |> sum(column: "agree")
  |> map(fn: (r) => ({_time: v.timeRangeStop, check: r.check, target: r.target, tier: r.tier, _value: r.agree}))`

	// qAlertTTFBP95 is completed by ttfbSLOQuery ({select}: the SLO's
	// check and target, or nothing for every check): per check × target
	// (and its tier, a label as in the Prometheus rules' VigilTTFBSLOBreach), how
	// many regions have a TTFB p95 over the range above {objective_ms}
	// with at least {min_samples} TTFB samples (runs that got a first byte
	// and runs that timed out before it, at their duration: ttfbSamples),
	// as the alerter's ttfb rule (a region's vantages pooled; the p95 is one of
	// the runs' own TTFBs, exact_selector, not a t-digest estimate), and
	// with at least {min_slow} of those samples above the objective, as the
	// alerter's TTFBMinSlowRuns: with fewer than 20 samples the p95 is the
	// slowest one, so one slow run alone would breach. A pair with runs and
	// no slow region says 0. (union and pivot, not join: join of two
	// branches of one stream returns nothing on InfluxDB 1.8.)
	qAlertTTFBP95 = `ttfb = ` + fromVerdicts + `{select}` + ttfbSamples + `
  |> group(columns: ["check", "target", "tier", "region"])
runs = ttfb
  |> count()
  |> map(fn: (r) => ({check: r.check, target: r.target, tier: r.tier, region: r.region, kind: "runs", _value: float(v: r._value)}))
over = ttfb
  |> map(fn: (r) => ({r with _value: if r._value > {objective_ms} then 1.0 else 0.0}))
  |> sum()
  |> map(fn: (r) => ({check: r.check, target: r.target, tier: r.tier, region: r.region, kind: "over", _value: r._value}))
p95 = ttfb
  |> quantile(q: 0.95, method: "exact_selector")
  |> map(fn: (r) => ({check: r.check, target: r.target, tier: r.tier, region: r.region, kind: "p95", _value: r._value}))
union(tables: [runs, over, p95])
  |> pivot(rowKey: ["check", "target", "tier", "region"], columnKey: ["kind"], valueColumn: "_value")
  |> map(fn: (r) => ({check: r.check, target: r.target, tier: r.tier, region: r.region,
      slow: if r.runs >= {min_samples}.0 and r.p95 > {objective_ms} and r.over >= {min_slow}.0 then 1.0 else 0.0}))
  |> group(columns: ["check", "target", "tier"])
  |> sum(column: "slow")
  |> map(fn: (r) => ({_time: v.timeRangeStop, check: r.check, target: r.target, tier: r.tier, _value: r.slow}))`

	// qAlertBurnRate is completed by burnPairQuery ({select} as in
	// qAlertTTFBP95): per check × target, how
	// many regions burn the error budget faster than the factor over both
	// the rule's range (the long window) and its last {short_ns}
	// nanoseconds (the short window), each with at least {min_runs} runs
	// over the long one: "failed/runs > {limit}" is "burn rate (failed/runs
	// over the budget) > factor". Regions count once, whatever their
	// vantages; a pair with verdicts and no burning region says 0. As the
	// alerter's burn_rate rule, per region, not over all regions at once,
	// and with its denominator: a window's ratio is failed runs ÷ max(runs,
	// the runs the check's interval makes in the window, rounded down), so
	// a young store's few runs count against a full window, as if the runs
	// not made had passed. The interval is the check's in the config
	// ({interval}, burnIntervalFlux: a map setting iv, as the Prometheus
	// rules take it from the checks), so a run written at another interval
	// (a pair slowed by adaptive, a canary still on an older config) does
	// not move the floor; for a check the rules were generated without
	// ({interval} empty: the committed rules), the interval (interval_ms)
	// of the region's newest run (each vantage's last, the newest of
	// them). That interval is read over the short window only: a region
	// without a run in it does not burn, and one with runs there has its
	// newest run there. A region without interval_ms (points written
	// before it existed) or with 0 sets no floor. The interval is read
	// apart and folded in by reduce, not pivoted: a pivot without it has
	// no such column, which Flux refuses to read.
	qAlertBurnRate = `verdicts = ` + fromVerdicts + `{select}
runs = verdicts
  |> filter(fn: (r) => r._field == "ok" or r._field == "cause")
  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")
  |> map(fn: (r) => ({check: r.check, target: r.target, region: r.region, run: 1.0,
      failed: if ` + availableRun + ` then 0.0 else 1.0,
      recent: if int(v: r._time) >= int(v: v.timeRangeStop) - {short_ns} then 1.0 else 0.0,
      t: 0, iv: 0.0}))
intervals = from(bucket: "${bucket}")
  |> range(start: time(v: int(v: v.timeRangeStop) - {short_ns}), stop: v.timeRangeStop)
  |> filter(fn: (r) => r._measurement == "vigil_verdict" and r._field == "interval_ms"){select}
  |> last()
  |> map(fn: (r) => ({check: r.check, target: r.target, region: r.region, run: 0.0, failed: 0.0, recent: 0.0,
      t: int(v: r._time), iv: float(v: r._value)}))
union(tables: [runs, intervals])
  |> group(columns: ["check", "target", "region"])
  |> reduce(identity: {runs: 0.0, failed: 0.0, sruns: 0.0, sfailed: 0.0, t: 0, iv: 0.0},
      fn: (r, accumulator) => ({runs: accumulator.runs + r.run, failed: accumulator.failed + r.failed,
        sruns: accumulator.sruns + r.recent, sfailed: accumulator.sfailed + r.failed * r.recent,
        t: if r.t > accumulator.t then r.t else accumulator.t,
        iv: if r.t > accumulator.t then r.iv else accumulator.iv})){interval}
  |> map(fn: (r) => ({r with
      lfloor: if r.iv > 0.0 then float(v: int(v: {long_ms}.0 / r.iv)) else 0.0,
      sfloor: if r.iv > 0.0 then float(v: int(v: {short_ms}.0 / r.iv)) else 0.0}))
  |> map(fn: (r) => ({check: r.check, target: r.target, region: r.region,
      burning: if r.runs >= {min_runs} and r.sruns > 0.0
        and r.failed / (if r.runs > r.lfloor then r.runs else r.lfloor) > {limit}
        and r.sfailed / (if r.sruns > r.sfloor then r.sruns else r.sfloor) > {limit} then 1.0 else 0.0}))
  |> group(columns: ["check", "target"])
  |> sum(column: "burning")
  |> map(fn: (r) => ({_time: v.timeRangeStop, check: r.check, target: r.target, _value: r.burning}))`

	// qAlertQuorumLost is completed by quorumLostQuery ({select} as in
	// qAlertDeadMan, {window_ns}: the dead-man window in nanoseconds,
	// {quorum}: the check's quorum, a float expression of r.check, 1.0
	// for a check one region judges, as the alerter's): per check with a
	// verdict within the rule's range (dead_man.forget_after), the number
	// of its regions silent (newest verdict, any target and vantage, older
	// than the window) when fewer than its quorum of regions are not, else
	// 0: the alerter's quorum_lost, over the regions the dead-man rule
	// judges.
	qAlertQuorumLost = quorumRegions + `
  |> group(columns: ["check"])
  |> reduce(identity: {silent: 0.0, reporting: 0.0},
      fn: (r, accumulator) => ({silent: accumulator.silent + r.silent, reporting: accumulator.reporting + 1.0 - r.silent}))
  |> map(fn: (r) => ({_time: v.timeRangeStop, check: r.check,
      _value: if r.reporting < {quorum} then r.silent else 0.0}))`

	// qAlertQuorumOf is completed by ruleQuorum.queries ({columns}: the
	// rule's label columns, quoted; {labels}: them as record properties;
	// {quorum}: the quorum of r.check, a float expression): for a rule
	// over every check whose checks' quorums differ (a push check with
	// push.region has 1), per series of its count of regions (check ×
	// target, and tier but for burn rate) with a verdict in the range, the
	// quorum that count must reach. Every verdict has the ok field, so
	// every series of the count has one here. The rule fires where the
	// count is at least this, and its count stays the regions it counted.
	qAlertQuorumOf = fromVerdicts + `
  |> filter(fn: (r) => r._field == "ok")
  |> last()
  |> group(columns: [{columns}])
  |> last()
  |> map(fn: (r) => ({_time: v.timeRangeStop, {labels}, _value: {quorum}}))`

	// quorumRegions: per check × region with a verdict within the range,
	// whether the region is silent (1.0: its newest verdict, any target
	// and vantage, is older than {window_ns}), for qAlertQuorumLost and
	// qAlertQuorumDetail.
	quorumRegions = fromVerdicts + `
  |> filter(fn: (r) => r._field == "ok"){select}
  |> last()
  |> group(columns: ["check", "region"])
  |> sort(columns: ["_time"])
  |> last()
  |> map(fn: (r) => ({check: r.check, region: r.region,
      silent: if int(v: v.timeRangeStop) - int(v: r._time) > {window_ns} then 1.0 else 0.0}))`

	// qAlertQuorumDetail says what qAlertQuorumLost counted, for the rule's
	// summary, in the alerter's words (quorum_lost): per check, one row
	// whose labels are regions (the silent regions, sorted,
	// comma-separated), reports ("only 1 region (eu-west) reports", "no
	// region reports"), quorum ({quorum_text}: "alerting.quorum is 2", or
	// "its quorum (push.region) is 1" for a check one region judges) and
	// until ("us-east reports", "1 of ap-south, us-east reports": which
	// must report again for the quorum), and whose
	// value is the number of silent regions. Its labels are not the
	// alert's (see qAlertDownDetail).
	qAlertQuorumDetail = quorumRegions + `
  |> group(columns: ["check"])
  |> sort(columns: ["region"])
  |> reduce(identity: {ns: 0.0, nr: 0.0, s: "", sp: "", rep: ""}, fn: (r, accumulator) => ({
      ns: accumulator.ns + r.silent,
      nr: accumulator.nr + 1.0 - r.silent,
      s: if r.silent == 0.0 then accumulator.s else if accumulator.s == "" then r.region else accumulator.s + "," + r.region,
      sp: if r.silent == 0.0 then accumulator.sp else if accumulator.sp == "" then r.region else accumulator.sp + ", " + r.region,
      rep: if r.silent > 0.0 then accumulator.rep else if accumulator.rep == "" then r.region else accumulator.rep + ", " + r.region}))
  |> map(fn: (r) => ({r with need: {quorum} - r.nr}))
  |> map(fn: (r) => ({_time: v.timeRangeStop, check: r.check, regions: r.s, _value: r.ns, quorum: {quorum_text},
      reports: if r.nr == 0.0 then "no region reports"
        else if r.nr == 1.0 then "only 1 region (" + r.rep + ") reports"
        else "only " + string(v: int(v: r.nr)) + " regions (" + r.rep + ") report",
      until: (if r.need < r.ns then string(v: int(v: r.need)) + " of " else "") + r.sp
        + (if r.need > 1.0 or (r.need == r.ns and r.ns > 1.0) then " report" else " reports")}))
  |> group(columns: ["check", "regions", "reports", "until", "quorum"])`

	// liveSums: per pool × origin, the proxies' signals of the range
	// summed over every proxy instance and region, as the alerter's
	// live_errors rule sums them (LiveFigures): requests, failed (5xx,
	// connection errors, timeouts), signals, and ejected (signals whose
	// proxy had the origin passively ejected). A drain is planned work:
	// every signal of a proxy instance (a series: pool × origin × region
	// × vantage) that had the origin drained in a signal of the range
	// (out_by names drained) is left out, and drained names those
	// instances ("region/vantage", sorted, ", "-separated; "" for none).
	// An origin drained on every instance keeps its row, at 0, so a firing
	// alert resolves as any other. Flux 0.65 fails a query that reads a
	// column a table lacks, even under exists, so the fields are summed
	// unpivoted (each as a float, a signal written before out_by existed
	// has none and counts) and region and vantage are read once every
	// instance's row shares one table with a blank row that has both.
	liveSums = `signals = ` + fromSignals + `
counts = signals
  |> filter(fn: (r) => r._field == "requests" or r._field == "status_5xx" or r._field == "conn_errors" or r._field == "timeouts")
  |> map(fn: (r) => ({r with _value: float(v: r._value)}))
ejected = signals
  |> filter(fn: (r) => r._field == "ejected")
  |> map(fn: (r) => ({r with _value: if r._value then 1.0 else 0.0}))
drained = signals
  |> filter(fn: (r) => r._field == "out_by")
  |> map(fn: (r) => ({r with _value: if r._value =~ /(^|,) *drained *(,|$)/ then 1.0 else 0.0}))
instances = union(tables: [counts, ejected, drained])
  |> group(columns: ["_time", "_value", "_field"], mode: "except")
  |> reduce(identity: {requests: 0.0, failed: 0.0, signals: 0.0, ejected: 0.0, drained: 0.0},
      fn: (r, accumulator) => ({
        requests: if r._field == "requests" then accumulator.requests + r._value else accumulator.requests,
        failed: if r._field == "status_5xx" or r._field == "conn_errors" or r._field == "timeouts" then accumulator.failed + r._value else accumulator.failed,
        signals: if r._field == "requests" then accumulator.signals + 1.0 else accumulator.signals,
        ejected: if r._field == "ejected" then accumulator.ejected + r._value else accumulator.ejected,
        drained: if r._field == "out_by" and r._value > 0.0 then 1.0 else accumulator.drained}))
// A row at 0 per instance with region and vantage, so the one table
// below has both columns even where no signal has those tags.
blank = instances
  |> set(key: "region", value: "")
  |> set(key: "vantage", value: "")
  |> map(fn: (r) => ({r with requests: 0.0, failed: 0.0, signals: 0.0, ejected: 0.0, drained: 0.0}))
union(tables: [instances, blank])
  |> group()
  |> map(fn: (r) => ({pool: r.pool, origin: r.origin,
      requests: if r.drained > 0.0 then 0.0 else r.requests,
      failed: if r.drained > 0.0 then 0.0 else r.failed,
      signals: if r.drained > 0.0 then 0.0 else r.signals,
      ejected: if r.drained > 0.0 then 0.0 else r.ejected,
      name: if r.drained == 0.0 then ""
        else (if exists r.region then r.region + "/" else "") + (if exists r.vantage then r.vantage else "")}))
  |> group(columns: ["pool", "origin"])
  |> sort(columns: ["name"])
  |> reduce(identity: {requests: 0.0, failed: 0.0, signals: 0.0, ejected: 0.0, drained: ""},
      fn: (r, accumulator) => ({requests: accumulator.requests + r.requests, failed: accumulator.failed + r.failed,
        signals: accumulator.signals + r.signals, ejected: accumulator.ejected + r.ejected,
        drained: if r.name == "" then accumulator.drained else if accumulator.drained == "" then r.name else accumulator.drained + ", " + r.name}))`

	// qAlertLiveErrors is completed by liveQuery ({ratio} and {share}:
	// live_errors.ratio and ejected_share in percent, {min_requests}): per
	// pool × origin over the range (live_errors.window), 1 when its live
	// traffic fails as the alerter's live_errors rule judges it
	// (LiveTraffic.Failing): a failed share at or above ratio with at least
	// min_requests requests, or ejected in at least ejected_share of the
	// signals; else 0.
	qAlertLiveErrors = liveSums + `
  |> map(fn: (r) => ({_time: v.timeRangeStop, pool: r.pool, origin: r.origin,
      _value: if (r.requests >= {min_requests}.0 and r.failed * 100.0 >= {ratio} * r.requests)
        or (r.signals > 0.0 and r.ejected * 100.0 >= {share} * r.signals) then 1.0 else 0.0}))`

	// qAlertLiveDetail says what qAlertLiveErrors counted, for the rule's
	// annotations: per pool × origin, one row whose labels are requests,
	// failed, signals and ejected (whole numbers) and drained (the proxy
	// instances left out, "" for none) and whose value is the failed share
	// in percent (0 without requests). Its labels are not the alert's (see
	// qAlertDownDetail).
	qAlertLiveDetail = liveSums + `
  |> map(fn: (r) => ({_time: v.timeRangeStop, pool: r.pool, origin: r.origin,
      requests: string(v: int(v: r.requests)), failed: string(v: int(v: r.failed)),
      signals: string(v: int(v: r.signals)), ejected: string(v: int(v: r.ejected)), drained: r.drained,
      _value: if r.requests > 0.0 then 100.0 * r.failed / r.requests else 0.0}))
  |> group(columns: ["pool", "origin", "requests", "failed", "signals", "ejected", "drained"])`

	// qAlertDeadMan is completed by deadManQuery ({select}: the rule's
	// checks, or nothing for every check): per check × region with a
	// verdict within the rule's range (dead_man.forget_after), the seconds
	// since its newest verdict from any target and vantage of the region,
	// as the Prometheus rules' VigilCanarySilent groups by check and region.
	// Every verdict has the ok field. The rule fires above its window.
	qAlertDeadMan = fromVerdicts + `
  |> filter(fn: (r) => r._field == "ok"){select}
  |> last()
  |> group(columns: ["check", "region"])
  |> sort(columns: ["_time"])
  |> last()
  |> map(fn: (r) => ({_time: v.timeRangeStop, check: r.check, region: r.region,
      _value: float(v: int(v: v.timeRangeStop) - int(v: r._time)) / 1000000000.0}))`
)
