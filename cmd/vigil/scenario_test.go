package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/proxy"
	"github.com/vigil-synthetics/vigil/reporting"
)

// The fault scenario suite: for each fault, three origins behind vigil and
// behind each peer proxy (nginx, HAProxy, Caddy) — every system has its own
// three origins and the fault hits every system's origin-b at the same
// moment — constant client load through every proxy, and per system the
// client-visible errors, wrong content served, time to detect, time to
// recover and POST replays. The tables go to the test log and to
// artifacts/scenarios.md.
//
// go test runs the short form (down, 503, corrupt, partition with 8 s
// windows); VIGIL_SCENARIOS=full runs every scenario with longer windows.
// -short skips the suite.

// scenario is one fault.
type scenario struct {
	name, desc string
	// fault is the checktest fault applied to origin-b ("" with partition).
	fault string
	// all applies the fault to every origin.
	all bool
	// partition cuts vigil's region-2 canary off origin-b instead.
	partition bool
	// short: part of the short form.
	short bool
	// noGETErrors: vigil must not let one GET fail.
	noGETErrors bool
	// wrongContent: vigil must stop serving origin-b within the deep
	// bound while the peers serve its wrong content.
	wrongContent bool
}

var scenarios = []scenario{
	{name: "down", desc: "origin-b refuses connections (listener closed)", fault: "down", short: true, noGETErrors: true},
	{name: "blackhole", desc: "origin-b accepts connections and never answers", fault: "blackhole"},
	{name: "503", desc: "origin-b answers every request with 503, /healthz included", fault: "503", short: true, noGETErrors: true},
	{name: "partial", desc: "origin-b answers 20 % of /api/* with 503; /healthz fine", fault: "partial:20%"},
	{name: "slow", desc: "origin-b delays every response but /healthz by 3 s", fault: "slow:3s"},
	{name: "corrupt", desc: "origin-b serves /asset.bin with 200, right length, wrong bytes; /healthz fine", fault: "corrupt", short: true, wrongContent: true},
	{name: "missing_header", desc: "origin-b drops Access-Control-Allow-Origin; status and bodies fine", fault: "missing_header", wrongContent: true},
	{name: "flapping", desc: "origin-b alternates between ok and 503 (everything) every 2 s (vigil's flap damping, by default more than 4 changes in 10 min, holds the verdict unhealthy for 5 min)", fault: "flapping:2s"},
	{name: "all_down", desc: "all three origins refuse connections", fault: "down", all: true},
	{name: "partition", desc: "region 2 cannot reach origin-b (relay cut); region 1 and the proxy can; quorum 2", partition: true, short: true},
}

func scenarioTimings(full bool) scenarioTiming {
	tm := scenarioTiming{interval: time.Second, verdictPoll: time.Second, fall: 2, rise: 2,
		pre: 3 * time.Second, fault: 8 * time.Second, post: 10 * time.Second, rate: 60}
	if full {
		tm.pre, tm.fault, tm.post, tm.rate = 5*time.Second, 20*time.Second, 20*time.Second, 100
	}
	return tm
}

// deepBound is the acceptance bound for wrong content: one deep interval ×
// fall + the verdict poll interval + slack for a loaded 2-core machine
// (the publish into the embedded store, check timeouts, scheduling).
func (tm scenarioTiming) deepBound() time.Duration {
	return tm.interval*time.Duration(tm.fall) + tm.verdictPoll + 4*time.Second
}

// ---- client load ----

type reqKind byte

const (
	kindAsset reqKind = iota
	kindAPI
	kindPOST
)

// reqEvent is one client request through a proxy.
type reqEvent struct {
	start time.Time
	lat   time.Duration
	kind  reqKind
	err   bool // transport error or non-2xx
	wrong bool // 200 with a wrong asset body or without Access-Control-Allow-Origin
}

type recorder struct {
	mu      sync.Mutex
	events  []reqEvent
	skipped int
}

func (r *recorder) add(e reqEvent) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

var assetSum = func() [32]byte { return sha256.Sum256(checktest.Asset()) }()

// runLoad sends rate requests per second to base until ctx ends or maxReq
// were sent: GET /asset.bin, GET /api/x and POST /api/orders/<id> at random
// (no Idempotency-Key), picked at random. At most 64 are in flight; a tick that finds 64 in
// flight is skipped and counted.
func runLoad(ctx context.Context, base, system string, rate float64, maxReq int, rec *recorder) {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 6 * time.Second}
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for i := 0; i < maxReq; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case sem <- struct{}{}:
		default:
			rec.mu.Lock()
			rec.skipped++
			rec.mu.Unlock()
			continue
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			rec.add(oneRequest(client, base, system, i))
		}(i)
	}
}

func oneRequest(client *http.Client, base, system string, i int) reqEvent {
	// A random kind, not i % 3: a strict rotation of three kinds over a
	// round-robin of three origins would send each origin one kind only.
	e := reqEvent{start: time.Now(), kind: reqKind(rand.IntN(3))}
	var req *http.Request
	switch e.kind {
	case kindAsset:
		req, _ = http.NewRequest(http.MethodGet, base+"/asset.bin", nil)
	case kindAPI:
		req, _ = http.NewRequest(http.MethodGet, base+"/api/x", nil)
	case kindPOST:
		req, _ = http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/orders/%s-%d", base, system, i),
			strings.NewReader(`{"item":"sku-1","qty":1}`))
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		e.err, e.lat = true, time.Since(e.start)
		return e
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	e.lat = time.Since(e.start)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		e.err = true
		return e
	}
	if e.kind == kindAsset {
		sum := sha256.Sum256(body)
		e.wrong = !bytes.Equal(sum[:], assetSum[:]) || resp.Header.Get("Access-Control-Allow-Origin") == ""
	}
	return e
}

// ---- sampling ----

// sample is origin-b's state at one moment: the client API requests it has
// served so far, and for vigil whether the proxy holds it out of rotation.
type sample struct {
	at          time.Time
	apiB        int64
	out         bool
	verdictDown bool
	why         string
}

// sampleLoop samples origin-b every period. outB, when set, reads whether
// the proxy holds origin-b out (vigil's Origins, HAProxy's stats socket).
func sampleLoop(ctx context.Context, b *checktest.Origin, outB func() (out, verdictDown bool, why string), every time.Duration) []sample {
	var out []sample
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s := sample{at: time.Now(), apiB: b.Count(http.MethodGet, "/api/x")}
		if outB != nil {
			s.out, s.verdictDown, s.why = outB()
		}
		out = append(out, s)
		select {
		case <-ctx.Done():
			return out
		case <-t.C:
		}
	}
}

// ---- measures ----

// measure is one system's row in a scenario table.
type measure struct {
	system                  string
	na                      string // non-empty: the scenario does not apply
	getN, getErr            int
	postN, postErr          int
	wrong                   int
	wrongLate               int // wrong content that started after the deep bound
	errAfter                int // errors of requests started after the fault ended
	skipped                 int
	detect, recover         time.Duration
	detectNote, recoverNote string // replaces the duration when set
	// note is a free remark printed under the table.
	note string
	// endNote describes origin-b's state in vigil's proxy at the end of
	// the run when it is still out.
	endNote string
	// byTraffic is the row measured by traffic, for comparison, when the
	// row is measured by the proxy's own state.
	byTraffic                *measure
	replays                  int
	everOut, everVerdictDown bool
	maxLat                   time.Duration
}

func scenarioDur(d time.Duration, note string) string {
	if note != "" {
		return note
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// trickle is the share of its pre-fault traffic origin-b may get in a
// second for the fault to count as detected by the traffic measure.
const trickle = 0.1

// traffic fills detect and recover from origin-b's share of the client API
// traffic, for the systems whose health state cannot be read (nginx,
// Caddy): detect is the start of the first second of the fault in which
// origin-b got at most trickle of its pre-fault rate, with the share of
// its traffic it still got from then to the end of the fault noted when
// not 0 (a passive proxy such as nginx sends a failed origin a request now
// and then to see whether it recovered, and lets it back in between);
// recover is the start of the first second after the fault in which it got
// half its pre-fault rate again. (Timing it by the last request origin-b
// got during the fault read nginx's periodic retries as never detecting.)
func (m *measure) traffic(samples []sample, f0, f1 time.Time) {
	countAt := func(t time.Time) int64 {
		var n int64
		for _, s := range samples {
			if s.at.After(t) {
				break
			}
			n = s.apiB
		}
		return n
	}
	if len(samples) == 0 || !samples[0].at.Before(f0) {
		m.detectNote, m.recoverNote = "n/o (no samples)", "–"
		return
	}
	pre := f0.Sub(samples[0].at).Seconds()
	base := float64(countAt(f0)-samples[0].apiB) / pre // requests a second
	if base <= 0 {
		m.detectNote, m.recoverNote = "n/o (no traffic)", "–"
		return
	}
	const step, win = 100 * time.Millisecond, time.Second
	// lowFrom: the first one-second window of the fault at or under the
	// trickle.
	lowFrom := time.Time{}
	for u := f0; !u.Add(win).After(f1); u = u.Add(step) {
		if float64(countAt(u.Add(win))-countAt(u)) <= trickle*base {
			lowFrom = u
			break
		}
	}
	if lowFrom.IsZero() {
		m.detectNote, m.recoverNote = "never", "— (never out)"
		return
	}
	m.detect = lowFrom.Sub(f0)
	if got := countAt(f1) - countAt(lowFrom); got > 0 {
		share := float64(got) / (base * f1.Sub(lowFrom).Seconds())
		if share > 0.5 {
			// A dip (the load generator or the machine stalled), not
			// taking it out.
			m.detectNote, m.recoverNote = "never", "— (never out)"
			return
		}
		pct := fmt.Sprintf("%.0f %%", 100*share)
		if share < 0.005 {
			pct = "<1 %"
		}
		m.detectNote = fmt.Sprintf("%.1f s (then %s of its traffic)", m.detect.Seconds(), pct)
	}
	m.recoverNote = "not back"
	last := samples[len(samples)-1].at
	for u := f1; !u.Add(win).After(last); u = u.Add(step) {
		if float64(countAt(u.Add(win))-countAt(u)) >= base/2 {
			m.recover, m.recoverNote = u.Sub(f1), ""
			break
		}
	}
}

// rotation fills detect and recover from the proxy's own view:
// detect is when origin-b left rotation, recover when it was back after the
// fault ended.
func (m *measure) rotation(samples []sample, f0, f1 time.Time) {
	m.detectNote, m.recoverNote = "never", "— (never out)"
	for _, s := range samples {
		if s.out {
			m.everOut = true
		}
		if s.verdictDown {
			m.everVerdictDown = true
		}
	}
	for _, s := range samples {
		if !s.at.Before(f0) && s.at.Before(f1) && s.out {
			m.detect, m.detectNote = s.at.Sub(f0), ""
			break
		}
	}
	if m.detectNote != "" {
		return
	}
	m.recoverNote = "not back"
	for _, s := range samples {
		if !s.at.Before(f1) && !s.out {
			m.recover, m.recoverNote = s.at.Sub(f1), ""
			break
		}
	}
}

// count fills the client-visible figures.
func (m *measure) count(events []reqEvent, f0, f1 time.Time, bound time.Duration) {
	for _, e := range events {
		if e.err && e.start.After(f1) {
			m.errAfter++
		}
		if e.kind == kindPOST {
			m.postN++
			if e.err {
				m.postErr++
			}
		} else {
			m.getN++
			if e.err {
				m.getErr++
			}
		}
		if e.wrong {
			m.wrong++
			if e.start.Sub(f0) > bound {
				m.wrongLate++
			}
		}
		m.maxLat = max(m.maxLat, e.lat)
	}
}

// postReplays counts POSTs that reached more than one origin.
func postReplays(o scenarioOrigins) int {
	seen := map[string]int64{}
	for _, x := range o {
		for k, n := range x.Requests() {
			if strings.HasPrefix(k, "POST /api/orders/") {
				seen[k] += n
			}
		}
	}
	r := 0
	for _, n := range seen {
		if n > 1 {
			r++
		}
	}
	return r
}

// ---- one scenario ----

// applyFault switches the scenario's fault on or off on one system.
func applyFault(sc scenario, o scenarioOrigins, rl *relay, on bool) error {
	if sc.partition {
		if rl != nil {
			rl.setCut(on)
		}
		return nil
	}
	targets := []*checktest.Origin{o[1]}
	if sc.all {
		targets = o[:]
	}
	for _, x := range targets {
		var err error
		if on {
			err = x.SetFault(sc.fault)
		} else {
			err = x.SetMode(checktest.ModeOK)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

type systemUnderTest struct {
	name    string
	url     string
	origins scenarioOrigins
	vigil   *vigilSystem
	peer    *runningPeer
	rec     recorder
	samples []sample
	// outB reads the proxy's own view of origin-b (nil: not readable).
	outB    func() (out, verdictDown bool, why string)
	outErrs atomic.Int64
}

func runScenario(t *testing.T, sc scenario, tm scenarioTiming, peers []peer) []measure {
	dir := t.TempDir()
	var systems []*systemUnderTest
	defer func() {
		for _, s := range systems {
			if s.vigil != nil {
				if err := s.vigil.stop(); err != nil {
					t.Errorf("vigil stopped with error: %v", err)
				}
			}
			if s.peer != nil {
				s.peer.stop()
			}
			s.origins.close()
		}
	}()

	o, err := startScenarioOrigins()
	if err != nil {
		t.Fatal(err)
	}
	vs := &systemUnderTest{name: "vigil", origins: o}
	systems = append(systems, vs)
	vdir := filepath.Join(dir, "vigil")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if vs.vigil, err = startVigilSystem(vdir, o, tm); err != nil {
		t.Fatal(err)
	}
	vs.url = vs.vigil.proxyURL()
	vs.outB = func() (bool, bool, string) {
		st, ok := vs.vigil.originB()
		var why []string
		for _, k := range []string{"drained", "verdict", "passive"} {
			if w, ok := st.Why[k]; ok {
				why = append(why, k+": "+w)
			}
		}
		return ok && !st.Available, ok && st.VerdictDown, strings.Join(why, "; ")
	}
	if !sc.partition {
		for _, p := range peers {
			o, err := startScenarioOrigins()
			if err != nil {
				t.Fatal(err)
			}
			s := &systemUnderTest{name: p.name, origins: o}
			systems = append(systems, s)
			pdir := filepath.Join(dir, p.name)
			if err := os.MkdirAll(pdir, 0o755); err != nil {
				t.Fatal(err)
			}
			if s.peer, err = p.start(pdir, o); err != nil {
				t.Fatal(err)
			}
			s.url = s.peer.url
			if p.outB != nil {
				s.outB = func() (bool, bool, string) {
					out, err := p.outB(pdir)
					if err != nil {
						s.outErrs.Add(1)
					}
					return out, false, ""
				}
			}
		}
	}

	// vigil is ready when both regions hold origin-b healthy and the proxy
	// has every origin in rotation.
	waitFor(t, 30*time.Second, "both regions healthy on origin-b and all origins in rotation", func() bool {
		for _, c := range []string{"healthz", "asset", "api"} {
			st := vs.vigil.verdictStates(c, "origin-b")
			if st["r1"] != reporting.StateHealthy || st["r2"] != reporting.StateHealthy {
				return false
			}
		}
		for _, s := range vs.vigil.app.prx.Origins() {
			if !s.Available {
				return false
			}
		}
		return true
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	total := tm.pre + tm.fault + tm.post
	maxReq := int(tm.rate*total.Seconds()) + 10
	var wg sync.WaitGroup
	for _, s := range systems {
		wg.Add(2)
		go func() { defer wg.Done(); runLoad(ctx, s.url, s.name, tm.rate, maxReq, &s.rec) }()
		go func() { defer wg.Done(); s.samples = sampleLoop(ctx, s.origins[1], s.outB, 100*time.Millisecond) }()
	}
	time.Sleep(tm.pre)
	f0 := time.Now()
	for _, s := range systems {
		rl := (*relay)(nil)
		if s.vigil != nil {
			rl = s.vigil.relay
		}
		if err := applyFault(sc, s.origins, rl, true); err != nil {
			t.Fatalf("%s: fault on: %v", s.name, err)
		}
	}
	time.Sleep(tm.fault)
	var partitionStates map[string]reporting.State
	if sc.partition {
		partitionStates = vs.vigil.verdictStates("healthz", "origin-b")
	}
	f1 := time.Now()
	for _, s := range systems {
		rl := (*relay)(nil)
		if s.vigil != nil {
			rl = s.vigil.relay
		}
		if err := applyFault(sc, s.origins, rl, false); err != nil {
			t.Fatalf("%s: fault off: %v", s.name, err)
		}
	}
	time.Sleep(tm.post)
	endState, _ := vs.vigil.originB()
	endAt := time.Now()
	cancel()
	wg.Wait()

	bound := tm.deepBound()
	var out []measure
	for _, s := range systems {
		m := measure{system: s.name, skipped: s.rec.skipped}
		m.count(s.rec.events, f0, f1, bound)
		if s.outB != nil {
			m.rotation(s.samples, f0, f1)
			tm := measure{}
			tm.traffic(s.samples, f0, f1)
			m.byTraffic = &tm
		} else {
			m.traffic(s.samples, f0, f1)
		}
		m.replays = postReplays(s.origins)
		if s.outB != nil {
			logTransitions(t, s.name, s.samples, f0, f1)
		}
		if n := s.outErrs.Load(); n > 0 {
			t.Logf("%s: %d of %d reads of its origin state failed", s.name, n, len(s.samples))
		}
		if s.vigil != nil && !endState.Available {
			m.endNote = describeOut(endState, endAt)
		}
		out = append(out, m)
	}
	if sc.partition {
		out[0].note = fmt.Sprintf("healthz × origin-b at the end of the window: r1 %s, r2 %s", partitionStates["r1"], partitionStates["r2"])
		for _, p := range peers {
			out = append(out, measure{system: p.name, na: "n/a: one vantage point (the proxy's own checks)"})
		}
	}

	// Acceptance.
	v := out[0]
	if v.replays != 0 {
		t.Errorf("vigil replayed %d POSTs (sent to more than one origin)", v.replays)
	}
	if sc.noGETErrors && v.getErr != 0 {
		t.Errorf("vigil: %d of %d GETs failed; want 0 on a %s fault", v.getErr, v.getN, sc.name)
	}
	if sc.wrongContent {
		if v.detectNote != "" || v.detect > bound {
			t.Errorf("vigil took origin-b out after %s; want within %s (deep interval %s × fall %d + verdict poll %s + 4s slack)",
				scenarioDur(v.detect, v.detectNote), bound, tm.interval, tm.fall, tm.verdictPoll)
		}
		if v.wrongLate != 0 {
			t.Errorf("vigil served %d wrong-content responses after %s", v.wrongLate, bound)
		}
		for _, m := range out[1:] {
			if m.wrong == 0 {
				t.Errorf("%s served no wrong content during %s; the scenario did not take", m.system, sc.name)
			}
		}
	}
	if sc.partition {
		if partitionStates["r2"] != reporting.StateUnhealthy || partitionStates["r1"] != reporting.StateHealthy {
			t.Errorf("partition did not take: healthz × origin-b states at the end of the window %v; want r1 healthy, r2 unhealthy", partitionStates)
		}
		if v.everOut || v.everVerdictDown {
			t.Errorf("vigil took origin-b out of rotation during a one-region partition with quorum 2 (out %v, verdict_down %v)", v.everOut, v.everVerdictDown)
		}
	}
	return out
}

func scenarioTable(sc scenario, tm scenarioTiming, ms []measure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n%s; fault window %s.\n\n", sc.name, sc.desc, tm.fault)
	b.WriteString("| proxy | GET errors | POST errors | wrong content served | time to detect | time to recover | POST replays |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, m := range ms {
		if m.na != "" {
			fmt.Fprintf(&b, "| %s | %s | | | | | |\n", m.system, m.na)
			continue
		}
		fmt.Fprintf(&b, "| %s | %d / %d | %d / %d | %d | %s | %s | %d |\n", m.system, m.getErr, m.getN, m.postErr, m.postN,
			m.wrong, scenarioDur(m.detect, m.detectNote), scenarioDur(m.recover, m.recoverNote), m.replays)
	}
	for _, m := range ms {
		if m.byTraffic != nil {
			fmt.Fprintf(&b, "\n%s measured by traffic, as nginx and Caddy are (origin-b's share of the client traffic): detect %s, recover %s.\n",
				m.system, scenarioDur(m.byTraffic.detect, m.byTraffic.detectNote), scenarioDur(m.byTraffic.recover, m.byTraffic.recoverNote))
		}
		if m.note != "" {
			fmt.Fprintf(&b, "\n%s: %s.\n", m.system, m.note)
		}
		if m.errAfter > 0 {
			fmt.Fprintf(&b, "\n%s: %d of its errors came after the fault had ended.\n", m.system, m.errAfter)
		}
		if m.endNote != "" {
			fmt.Fprintf(&b, "\n%s: origin-b still out at the end of the run (%s after the fault ended): %s.\n", m.system, tm.post, m.endNote)
		}
		if m.skipped > 0 {
			fmt.Fprintf(&b, "\n%s: the load generator skipped %d ticks (64 requests in flight).\n", m.system, m.skipped)
		}
	}
	return b.String()
}

func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("fault scenario suite skipped in -short mode")
	}
	full := os.Getenv("VIGIL_SCENARIOS") == "full"
	tm := scenarioTimings(full)
	var peers []peer
	for _, p := range scenarioPeers {
		if err := p.available(); err != nil {
			checktest.NeedDependency(t, p.name, err)
			continue
		}
		peers = append(peers, p)
	}
	form := "short"
	if full {
		form = "full"
	}
	var doc strings.Builder
	fmt.Fprintf(&doc, `# Fault scenarios (%s form, %s)

Each system has its own three checktest origins; the fault hits every
system's origin-b at the same moment. Client load: %.0f req/s per proxy, GET
/asset.bin, GET /api/x and POST /api/orders/<id> (no Idempotency-Key) at random;
%s healthy, %s fault, %s after. vigil: canaries in two regions (region 2
reaches origin-b through a relay), every check every %s, fall %d rise %d,
verdict quorum 2, verdict poll %s, passive failure_rate 10%% / 5 s,
latency_p95 1 s, 3 tries.

- **GET/POST errors**: transport errors or non-2xx, of all sent.
- **wrong content served**: 200 on /asset.bin whose SHA-256 differs from the
  asset's or without Access-Control-Allow-Origin.
- **time to detect**: vigil and HAProxy — fault start until the proxy takes
  origin-b out of rotation by its own state (vigil's origins API, HAProxy's
  stats socket; the figure by traffic follows each table). nginx and Caddy
  (no readable health state) — fault start until the first second in
  which origin-b got at most %.0f %% of its pre-fault API traffic, with the
  share of its traffic it still got from then to the end of the fault in
  brackets when not 0 (a passive proxy's retries of a failed origin, and
  the times it let it back in); "never": no such second, or origin-b got
  more than half its traffic from then on.
- **time to recover**: vigil and HAProxy — fault end until origin-b is back
  in rotation by its own state. nginx and Caddy — fault end until the first
  second in which origin-b got half its pre-fault traffic again.
- **POST replays**: POSTs that reached more than one origin.

Peer settings:
`, form, time.Now().UTC().Format("2006-01-02 15:04 MST"), tm.rate, tm.pre, tm.fault, tm.post,
		tm.interval, tm.fall, tm.rise, tm.verdictPoll, 100*trickle)
	for _, p := range peers {
		fmt.Fprintf(&doc, "- %s\n", p.note)
	}
	doc.WriteString("\n")
	for _, sc := range scenarios {
		if !full && !sc.short {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			ms := runScenario(t, sc, tm, peers)
			tab := scenarioTable(sc, tm, ms)
			t.Log("\n" + tab)
			doc.WriteString(tab + "\n")
		})
	}
	path := filepath.Join(artifactDir(t), "scenarios.md")
	if err := os.WriteFile(path, []byte(doc.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("scenario tables: %s", path)
}

// describeOut says why an origin is out of rotation.
func describeOut(st proxy.OriginStatus, now time.Time) string {
	var parts []string
	for _, k := range []string{"drained", "verdict", "passive"} {
		if why, ok := st.Why[k]; ok {
			parts = append(parts, fmt.Sprintf("%s since %.1f s ago (%s)", k, now.Sub(st.Since[k]).Seconds(), why))
		}
	}
	if st.EjectedUntil != nil {
		parts = append(parts, fmt.Sprintf("passive ejection %d, ends in %.1f s", st.Ejections, st.EjectedUntil.Sub(now).Seconds()))
	}
	return strings.Join(parts, "; ")
}

// logTransitions logs every time origin-b left or re-entered rotation, in
// seconds from the fault start, with the reason the proxy gives.
func logTransitions(t *testing.T, system string, samples []sample, f0, f1 time.Time) {
	var b strings.Builder
	prev := false
	for _, s := range samples {
		if s.out == prev {
			continue
		}
		prev = s.out
		state := "back in"
		if s.out {
			state = "out"
		}
		fmt.Fprintf(&b, "\n  %+6.1f s  %s", s.at.Sub(f0).Seconds(), state)
		if s.why != "" {
			fmt.Fprintf(&b, " (%s)", s.why)
		}
	}
	t.Logf("%s: origin-b rotation (fault %+.1f s to %+.1f s):%s", system, 0.0, f1.Sub(f0).Seconds(), b.String())
}
