package scripts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// pollInterval is how often waits re-check the page.
const pollInterval = 50 * time.Millisecond

// pageEvents collects what the page reported during a run. handle runs on
// chromedp's event loop and must stay fast.
type pageEvents struct {
	mu             sync.Mutex
	consoleErrors  []string
	failedRequests []string
	// loading holds the frames that started loading and have not stopped:
	// true once the new document arrived (committed), false while the
	// frame still waits for its server. At most maxEvents frames.
	loading map[cdp.FrameID]bool
	dialog  bool // a JavaScript dialog is open
	// contexts holds the unique id of the main JavaScript context of each
	// frame in the tab's process (the page's and its same-process
	// iframes'), for steps with a frame. At most maxContexts.
	contexts map[cdp.FrameID]string
	// nav follows the navigation the current navigate step started;
	// navWake is closed (and replaced) when it changes.
	nav     navState
	navWake chan struct{}
	// pending holds the network requests that have not finished nor
	// failed, by id: what a load event may still wait for. At most
	// maxPending.
	pending map[network.RequestID]pendingRequest
	seq     int // orders pending
	// docURL holds the URL of the last document each frame asked for
	// (the last of its redirects), for messages about a navigation that
	// waits for its server. At most maxEvents frames.
	docURL map[cdp.FrameID]string
	// docFailed holds the failed documents the page asked for ("404
	// URL"), which an iframe's log reports again (countFrame).
	docFailed map[string]bool
	// opened is the URL of the last new tab or window the page opened
	// (a target=_blank link, window.open), which the run does not follow.
	opened string
}

// pendingRequest is a request still in flight.
type pendingRequest struct {
	url string
	seq int
}

// maxPending bounds the requests a tab tracks as in flight.
const maxPending = 1000

// navState is what the events said of a navigation of the tab's main frame
// since navigate started it.
type navState struct {
	main      cdp.FrameID       // the tab's main frame; "" when no navigation is followed
	docReq    network.RequestID // the document's request (the last of its redirects)
	start     cdp.MonotonicTime // when the document was first asked for
	status    int               // the document's status; 0: no response yet
	url       string            // the document's final URL
	ttfb      time.Duration     // from start to the document's response
	committed bool              // the new document replaced the old one
	dcl, load bool              // its DOMContentLoaded and load events fired
	stopped   bool              // the main frame stopped loading after the document's response
	failed    string            // the document's request failed: Chromium's error text
	mime      string            // the document's Content-Type, as Chromium read it
	attach    string            // the document's Content-Disposition header
}

// startNav starts following a navigation of the frame main, forgetting
// the requests of the page before.
func (p *pageEvents) startNav(main cdp.FrameID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nav = navState{main: main}
	p.navWake = make(chan struct{})
	p.pending = nil
}

// navigation returns what is known of the navigation startNav began, and
// a channel closed when that changes.
func (p *pageEvents) navigation() (navState, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nav, p.navWake
}

// pendingURLs returns the URLs of up to n requests still in flight, oldest
// first, and how many there are in all.
func (p *pageEvents) pendingURLs(n int) ([]string, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	all := make([]pendingRequest, 0, len(p.pending))
	for _, r := range p.pending {
		all = append(all, r)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].seq < all[j].seq })
	var out []string
	for _, r := range all[:min(n, len(all))] {
		out = append(out, units.RedactURL(r.url))
	}
	return out, len(all)
}

// openedURL returns the URL of the last new tab or window the page
// opened, or "".
func (p *pageEvents) openedURL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.opened
}

// handleNav records the events of the network and of the main frame that
// tell how far the followed navigation got. p.mu is held.
func (p *pageEvents) handleNav(ev any) {
	n := &p.nav
	before := *n
	defer func() {
		if *n != before && p.navWake != nil {
			close(p.navWake) // navigate looks again
			p.navWake = make(chan struct{})
		}
	}()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if ev.Request != nil && putBounded(&p.pending, ev.RequestID, pendingRequest{url: ev.Request.URL, seq: p.seq + 1}, maxPending) {
			p.seq++
		}
		if n.main != "" && ev.FrameID == n.main && ev.Type == network.ResourceTypeDocument && !n.committed {
			if n.docReq == "" || ev.RedirectResponse == nil && ev.RequestID != n.docReq {
				n.start = ev.Timestamp
			}
			n.docReq = ev.RequestID
		}
	case *network.EventResponseReceived:
		if n.main != "" && ev.RequestID == n.docReq && ev.Response != nil && n.status == 0 {
			n.status, n.url, n.mime = int(ev.Response.Status), ev.Response.URL, ev.Response.MimeType
			for k, v := range ev.Response.Headers {
				if strings.EqualFold(k, "Content-Disposition") {
					n.attach = strings.TrimSpace(fmt.Sprint(v))
				}
			}
			n.ttfb = time.Duration((float64(ev.Timestamp) - float64(n.start)) * float64(time.Second))
		}
	case *network.EventLoadingFinished:
		delete(p.pending, ev.RequestID)
	case *network.EventLoadingFailed:
		delete(p.pending, ev.RequestID)
		if n.main != "" && ev.RequestID == n.docReq && !n.committed {
			n.failed = ev.ErrorText
		}
	case *page.EventFrameNavigated:
		if n.main != "" && ev.Frame != nil && ev.Frame.ID == n.main && ev.Type == page.NavigationTypeNavigation {
			n.committed = true
		}
	case *page.EventDomContentEventFired:
		if n.committed {
			n.dcl = true
		}
	case *page.EventLoadEventFired:
		if n.committed {
			n.dcl, n.load = true, true
		}
	case *page.EventFrameStoppedLoading:
		// Only a stop after the document's response: the load the
		// navigation interrupted (a new tab's about:blank) stops too.
		if n.main != "" && ev.FrameID == n.main && n.status != 0 {
			n.stopped = true
		}
	}
}

// maxContexts bounds the frames whose JavaScript contexts a tab tracks.
const maxContexts = 1000

// frameContext returns the unique id of the main JavaScript context of
// the frame, "" when the tab's process has none (not loaded yet, or the
// frame runs in another process).
func (p *pageEvents) frameContext(id cdp.FrameID) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.contexts[id]
}

func (p *pageEvents) handle(ev any) {
	switch ev.(type) {
	case *network.EventRequestWillBeSent, *network.EventResponseReceived, *network.EventLoadingFinished,
		*network.EventLoadingFailed, *page.EventFrameNavigated, *page.EventDomContentEventFired,
		*page.EventLoadEventFired, *page.EventFrameStoppedLoading:
		p.mu.Lock()
		p.handleNav(ev)
		p.mu.Unlock()
	}
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if ev.Type == network.ResourceTypeDocument && ev.Request != nil {
			p.mu.Lock()
			putBounded(&p.docURL, ev.FrameID, ev.Request.URL, maxEvents)
			p.mu.Unlock()
		}
	case *page.EventFrameStartedLoading:
		p.setLoading(ev.FrameID, false, true)
	case *page.EventFrameNavigated:
		if ev.Frame != nil {
			p.setLoading(ev.Frame.ID, true, false)
		}
	case *page.EventFrameStoppedLoading:
		p.mu.Lock()
		delete(p.loading, ev.FrameID)
		p.mu.Unlock()
	case *page.EventJavascriptDialogOpening:
		p.mu.Lock()
		p.dialog = true
		p.mu.Unlock()
	case *page.EventWindowOpen:
		p.mu.Lock()
		p.opened = ev.URL
		p.mu.Unlock()
	case *page.EventJavascriptDialogClosed:
		p.mu.Lock()
		p.dialog = false
		p.mu.Unlock()
	case *runtime.EventExecutionContextCreated:
		var aux struct {
			IsDefault bool        `json:"isDefault"`
			FrameID   cdp.FrameID `json:"frameId"`
		}
		if ev.Context == nil || json.Unmarshal([]byte(ev.Context.AuxData), &aux) != nil || !aux.IsDefault || aux.FrameID == "" {
			return
		}
		p.mu.Lock()
		putBounded(&p.contexts, aux.FrameID, ev.Context.UniqueID, maxContexts)
		p.mu.Unlock()
	case *runtime.EventExecutionContextDestroyed:
		p.mu.Lock()
		for id, u := range p.contexts {
			if u == ev.ExecutionContextUniqueID {
				delete(p.contexts, id)
			}
		}
		p.mu.Unlock()
	case *runtime.EventExecutionContextsCleared:
		p.mu.Lock()
		p.contexts = nil
		p.mu.Unlock()
	default:
		p.count(ev)
	}
}

// count records the console errors and failed requests an event reports,
// of the tab's target or of one of its out-of-process iframes (see
// tab.onAttached): no_console_errors and max_failed_requests count every
// frame of the page, as Playwright's page events do.
func (p *pageEvents) count(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		var parts []string
		for _, a := range ev.Args {
			switch {
			case a == nil:
			case len(a.Value) > 0:
				var s string
				if json.Unmarshal(a.Value, &s) == nil {
					parts = append(parts, s)
				} else {
					parts = append(parts, string(a.Value))
				}
			default:
				parts = append(parts, a.Description)
			}
		}
		// URLs in it show as every URL vigil shows (query values as …).
		p.add(&p.consoleErrors, hideURLsIn("console."+string(ev.Type)+": "+strings.Join(parts, " ")))
	case *runtime.EventExceptionThrown:
		text := "exception"
		if d := ev.ExceptionDetails; d != nil {
			text = d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				text += " " + firstLine(d.Exception.Description)
			}
		}
		p.add(&p.consoleErrors, hideURLsIn(text))
	case *network.EventLoadingFailed:
		if ev.Canceled && ev.BlockedReason == "" {
			return // aborted by the page or a navigation, not a failure
		}
		p.add(&p.failedRequests, fmt.Sprintf("%s (%s)", ev.ErrorText, ev.Type))
	case *network.EventResponseReceived:
		if ev.Response == nil || ev.Response.Status < 400 {
			return
		}
		if u, err := url.Parse(ev.Response.URL); err == nil && u.Path == "/favicon.ico" {
			return // browsers ask for it on their own
		}
		if ev.Type == network.ResourceTypeDocument {
			p.mu.Lock()
			putBounded(&p.docFailed, fmt.Sprintf("%d %s", ev.Response.Status, ev.Response.URL), true, maxEvents)
			p.mu.Unlock()
		}
		p.add(&p.failedRequests, fmt.Sprintf("%d %s", ev.Response.Status, units.RedactURL(ev.Response.URL)))
	}
}

// failedLoad reads the status out of the text of Chromium's log entry for
// a failed load ("Failed to load resource: the server responded with a
// status of 404 (Not Found)").
var failedLoad = regexp.MustCompile(`status of (\d{3})\b`)

// countFrame records the console errors and failed requests of an
// out-of-process iframe (see tab.onAttached). vigil attaches to the
// iframe a moment after Chromium creates it, and a fast page is done by
// then: its console messages come from Runtime.enable, which reports
// those logged before, and its failed requests from Log.enable, which
// reports Chromium's "Failed to load resource" entries logged before (a
// response of 400 or more, a network error), instead of the Network
// events, which start only then. The iframe's own document is counted
// once, by the page's request for it.
func (p *pageEvents) countFrame(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled, *runtime.EventExceptionThrown:
		p.count(ev)
	case *log.EventEntryAdded:
		e := ev.Entry
		if e == nil || e.Source != log.EntrySourceNetwork || e.Level != log.EntryLevelError {
			return
		}
		shown := units.RedactURL(e.URL)
		if m := failedLoad.FindStringSubmatch(e.Text); m != nil {
			if p.isDocFailure(m[1] + " " + e.URL) {
				return
			}
			p.add(&p.failedRequests, m[1]+" "+shown)
			return
		}
		text := strings.TrimPrefix(e.Text, "Failed to load resource: ")
		p.add(&p.failedRequests, fmt.Sprintf("%s (%s)", text, shown))
	}
}

// isDocFailure reports whether key ("404 URL") is the failed response of
// a document the page asked for (an iframe's).
func (p *pageEvents) isDocFailure(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.docFailed[key]
}

// maxEvents bounds each event list of a run.
const maxEvents = 100

func (p *pageEvents) add(list *[]string, s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(*list) < maxEvents {
		*list = append(*list, s)
	}
}

// setLoading records a frame's load: started (not committed yet), or
// committed when it is loading.
func (p *pageEvents) setLoading(id cdp.FrameID, committed, started bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.loading[id]; !ok && !started {
		return
	}
	putBounded(&p.loading, id, committed, maxEvents)
}

// putBounded sets (*m)[k] to v, making the map when it is nil, unless k is
// new and the map already holds limit keys: a key already there is always
// updated. It reports whether it set.
func putBounded[K comparable, V any](m *map[K]V, k K, v V, limit int) bool {
	if _, ok := (*m)[k]; !ok && len(*m) >= limit {
		return false
	}
	if *m == nil {
		*m = map[K]V{}
	}
	(*m)[k] = v
	return true
}

// pageState is what the events say of the page's main frame.
type pageState struct {
	awaiting bool   // a navigation waits for its server: no new document yet
	url      string // the document the frame asked for last
	loading  bool   // the document arrived, its load event did not
	dialog   bool   // a JavaScript dialog is open
}

// state returns the state of the frame main (the tab's main frame).
func (p *pageEvents) state(main cdp.FrameID) pageState {
	p.mu.Lock()
	defer p.mu.Unlock()
	committed, ok := p.loading[main]
	if ok && !committed && p.nav.main == main && p.nav.status != 0 && !p.nav.committed {
		// The followed navigation's document answered: it is being
		// committed, not waiting for its server.
		committed = true
	}
	return pageState{awaiting: ok && !committed, loading: ok && committed, dialog: p.dialog, url: p.docURL[main]}
}

func (p *pageEvents) snapshot() (console, failed []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.consoleErrors...), append([]string(nil), p.failedRequests...)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// outcome is what one step produced.
type outcome struct {
	cause      checks.Cause
	err        error // nil: the step passed
	status     int
	url        string
	ttfb       time.Duration
	phases     checks.Phases // DNS, connect, TLS, transfer of the request ttfb is from
	assertions []checks.AssertionResult
	metrics    map[string]float64
	artifacts  []string
}

// navPhases reads a navigation's document request phases from its
// metrics (metricsJS: dns_ms, connect_ms, tls_ms, transfer_ms).
func navPhases(m map[string]float64) checks.Phases {
	d := func(k string) time.Duration { return time.Duration(max(m[k], 0) * float64(time.Millisecond)) }
	return checks.Phases{DNS: d("dns_ms"), Connect: d("connect_ms"), TLS: d("tls_ms"), Transfer: d("transfer_ms")}
}

// failf makes a script failure.
func failf(format string, a ...any) outcome {
	return outcome{cause: checks.CauseScript, err: fmt.Errorf(format, a...)}
}

// roundForText rounds a step's time budget for messages: to 100ms from
// one second up ("4s", not "3.999871s"), else to the millisecond.
func roundForText(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// waitErr is the error of a wait that ran out of time in a step. element:
// the step waited for an element (or its text), so running out of the run's
// time is still a script failure, not the run's timeout. load: the step
// waited for a navigation's load event, so running out of the step's own
// timeout is a timeout too (the origin did not deliver the page in time,
// like an http step that runs out of its timeout); a step whose page did
// not answer at all (a script that never yields, see noAnswer) sets it too.
type waitErr struct {
	what    string
	element bool
	load    bool
}

func (e *waitErr) Error() string { return e.what }

// resolveURL joins a URL without a scheme to the target's base URL.
func resolveURL(base, ref string) string {
	if u, err := url.Parse(ref); err == nil && u.Scheme != "" {
		return ref
	}
	if ref == "" {
		return base
	}
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(ref, "/")
}

// metricsJS reads Navigation Timing, LCP and CLS of the current document.
// Times are milliseconds from the navigation's start.
const metricsJS = `(async () => {
  const out = {};
  const nav = performance.getEntriesByType('navigation')[0];
  if (nav) {
    out.ttfb_ms = nav.responseStart - nav.startTime;
    out.request_to_first_byte_ms = nav.responseStart - nav.requestStart;
    if (nav.domContentLoadedEventEnd > 0) out.dom_content_loaded_ms = nav.domContentLoadedEventEnd - nav.startTime;
    if (nav.loadEventEnd > 0) out.load_ms = nav.loadEventEnd - nav.startTime;
    out.transfer_bytes = nav.transferSize;
    out.dns_ms = nav.domainLookupEnd - nav.domainLookupStart;
    out.connect_ms = nav.connectEnd - nav.connectStart;
    if (nav.secureConnectionStart > 0) {
      out.tls_ms = nav.connectEnd - nav.secureConnectionStart;
      out.connect_ms = nav.secureConnectionStart - nav.connectStart;
    }
    out.transfer_ms = nav.responseEnd - nav.responseStart;
  }
  // LCP is reported some frames after the first paint: take the first
  // report, or give up after 250 ms (a page that painted nothing contentful).
  const lcp = await new Promise((resolve) => {
    try {
      const po = new PerformanceObserver((l) => {
        const e = l.getEntries();
        if (e.length) { po.disconnect(); resolve(e[e.length - 1]); }
      });
      po.observe({type: 'largest-contentful-paint', buffered: true});
      setTimeout(() => { const e = po.takeRecords(); po.disconnect(); resolve(e.length ? e[e.length - 1] : null); }, 250);
    } catch (e) { resolve(null); }
  });
  if (lcp) { out.lcp_ms = lcp.renderTime || lcp.loadTime || lcp.startTime; }
  const shifts = await new Promise((resolve) => {
    let got = [];
    try {
      const po = new PerformanceObserver((l) => { got = got.concat(l.getEntries()); });
      po.observe({type: 'layout-shift', buffered: true});
      setTimeout(() => { got = got.concat(po.takeRecords()); po.disconnect(); resolve(got); }, 0);
    } catch (e) { resolve(got); }
  });
  let cls = 0;
  for (const s of shifts) { if (!s.hadRecentInput) cls += s.value; }
  out.cls = cls;
  return out;
})()`

// textJS returns {found, text} for the element a selector finds, and for
// a CSS selector how many elements it matches (count; the first is used).
const textJS = `((sel) => {
  const el = find(sel);
  const count = sel.css ? document.querySelectorAll(sel.css).length : 0;
  return el ? {found: true, text: (el.innerText ?? el.textContent ?? '').trim(), count: count} : {found: false, text: ''};
})(%s)`

// selectJS sets a <select>'s value and fires input and change events.
const selectJS = `((sel, v) => {
  const el = find(sel, true);
  if (!el) return 'missing';
  el.value = v;
  if (el.value !== v) return 'no option';
  el.dispatchEvent(new Event('input', {bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
  return 'ok';
})(%s, %s)`

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

type elementText struct {
	Found bool   `json:"found"`
	Text  string `json:"text"`
	Count int    `json:"count"` // elements a CSS selector matched; 0 for a text selector
	// stalled: when the time ran out, the question to the page then had
	// gone unanswered for stallAfter or more (or the page answered nothing
	// at all in the step; readText).
	stalled bool
	// answered: the page answered at least once during the step.
	answered bool
}

// stallAfter is how long a question to a page may have gone unanswered,
// when a step's time runs out during it, for the step to say that the
// page did not answer rather than what it last saw. It is counted from
// the question, not from the page's last answer, and is well above what a
// page that is not busy takes: a poll in a frame asks several questions
// in a row (where the frame is, the element in it, where the frame is
// after scrolling, what a click there reaches), and on a loaded machine
// one DevTools question took 400ms; counted from the last answer of the
// poll before, 250ms passed while the page answered every question, and a
// click that an overlay took was said to be on a page that stopped
// answering.
const stallAfter = time.Second

// noAnswer is the outcome of a step whose page did not answer when its
// time ran out (a script that never yields): cause timeout, as a
// navigation without its load event, since the element the step waited
// for could not even be looked at. answered: the page answered earlier in
// the step.
func (r *run) noAnswer(ctx context.Context, what, sel, timeoutText string, answered bool) outcome {
	why := r.unanswered()
	msg := fmt.Sprintf("%s: the page did not answer within %s%s, so %s could not be checked", what, timeoutText, why, sel)
	if answered {
		msg = fmt.Sprintf("%s: the page stopped answering%s and did not answer again within %s, so %s could not be checked", what, why, timeoutText, sel)
	}
	o := r.waitFail(ctx, ctx.Err(), what, msg)
	if we, ok := o.err.(*waitErr); ok {
		we.load = true
	}
	return o
}

// unanswered says why the tab's page did not answer a question, as the
// events tell it: ": a navigation to URL was still waiting for its
// server" (a link to a slow server: no script runs until the document
// arrives), ": a JavaScript dialog is open", or " (a script that never
// yields)" when nothing else explains it: a document that arrived answers
// while it loads, unless its script keeps the renderer busy.
func (r *run) unanswered() string {
	if r.tab == nil {
		return ""
	}
	st := r.tab.events.state(r.tab.mainFrame())
	u := "a new page"
	if st.url != "" {
		u = units.RedactURL(st.url)
	}
	switch {
	case st.dialog:
		return ": a JavaScript dialog is open"
	case st.awaiting:
		return fmt.Sprintf(": a navigation to %s was still waiting for its server", u)
	}
	return " (a script that never yields)"
}

// several says, for a failed text assertion, that the selector matched
// more than one element and which one was read: a selector that became
// ambiguous after a redesign otherwise fails with a puzzling text.
func (et elementText) several(sel string) string { return several(sel, et.Count) }

// several says that a CSS selector matched n > 1 elements, of which the
// first is acted on: " (.b matched 2 elements; the first is used)", or
// nothing.
func several(sel string, n int) string {
	if n < 2 {
		return ""
	}
	return fmt.Sprintf(" (%s matched %d elements; the first is used)", sel, n)
}

// countJS is an expression that tells how many elements a CSS selector
// (the variable sel of a page script) matches: 0 for a text selector.
const countJS = `(() => { try { return sel.css ? document.querySelectorAll(sel.css).length : 0; } catch (e) { return 0; } })()`

// readText polls the element's text until cond accepts it or ctx ends.
// frame is the state of a step's frame that was not ready (see scopeOf).
func (r *run) readText(ctx context.Context, fr *selector, sel selector, cond func(elementText) bool) (et elementText, frame string, err error) {
	js := pageJS(textJS, sel.js())
	answered := false
	for {
		// asked: when the page was asked the question it has not
		// answered yet.
		asked := time.Now()
		sc, state, err := r.scopeOf(ctx, fr, false)
		if err != nil && ctx.Err() == nil && !r.tab.browserDead() {
			// The page is between documents: ask again.
			state, err = frameNoDoc, nil
		}
		if err != nil {
			et.stalled = ctx.Err() != nil && (!answered || time.Since(asked) >= stallAfter)
			et.answered = answered
			return et, frame, err
		}
		frame = state
		if state == "" {
			prev := et
			asked = time.Now()
			et, err = evalIn[elementText](ctx, sc, js)
			if err == nil {
				answered = true
			}
			et.answered = answered
			if err != nil && ctx.Err() != nil {
				// The time ran out while the page was asked: what it
				// said last is what the step saw, unless it had not
				// answered for a while.
				et = prev
				et.stalled = !answered || time.Since(asked) >= stallAfter
				et.answered = answered
			}
			var ee *chromedp.ExceptionError
			switch {
			case err == nil, ctx.Err() != nil, r.tab.browserDead(), errors.As(err, &ee):
			case fr != nil:
				// The frame's document went away (it navigated), or its
				// process did: find it anew.
				r.tab.forgetFrame(sc.t)
				frame, err = frameNoDoc, nil
			default:
				// A navigation replaced the document while it was asked
				// (a click that submitted a form): ask the new one.
				et, err = elementText{}, nil
			}
			if err != nil {
				return et, frame, err
			}
			if cond(et) {
				return et, frame, nil
			}
		}
		select {
		case <-ctx.Done():
			return et, frame, ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

// runBrowser runs one browser action in the run's tab. ctx is the step's
// context (a child of the tab's), x expands variables.
func (r *run) runBrowser(ctx context.Context, s *Step, timeout time.Duration) outcome {
	b := s.Browser
	x := r.vars.expand
	timeoutText := roundForText(timeout).String()
	// A step with a frame acts in the iframe's document (see scopeOf).
	var fr *selector
	if b.Frame != nil {
		raw, err := x(*b.Frame)
		if err != nil {
			return failf("frame: %w", err)
		}
		f, o, bad := r.selector(ctx, "frame", raw)
		if bad {
			return o
		}
		fr = &f
	}
	switch {
	case b.nav != nil:
		u, err := x(b.nav.URL)
		if err != nil {
			return failf("navigate: %w", err)
		}
		u = resolveURL(r.target.URL, u)
		// Query values may hold secrets: messages show them as "…", as
		// the step's url does.
		shown := units.RedactURL(u)
		if err := checkNavigateURL(u); err != nil {
			return outcome{cause: checks.CauseScript, err: fmt.Errorf("navigate %s: %w", shown, err)}
		}
		r.navFailed = ""
		nav, err := r.navigate(ctx, u, b.nav.WaitUntil)
		if err != nil {
			var de *downloadErr
			if errors.As(err, &de) {
				// The origin answered: not a connection failure.
				return outcome{cause: checks.CauseScript, status: de.status, ttfb: nav.ttfb, url: u,
					err: fmt.Errorf("navigate %s: %w", shown, err)}
			}
			var le *chromedp.LoadError
			if errors.As(err, &le) {
				r.navFailed = le.ErrorText
				return outcome{cause: loadErrorCause(le.ErrorText), err: fmt.Errorf("navigate %s: %s", shown, le.ErrorText), url: u}
			}
			event := "load event"
			switch b.nav.WaitUntil {
			case WaitDOMContentLoaded:
				event = "DOMContentLoaded event"
			case WaitCommit:
				event = "new document"
			}
			msg := fmt.Sprintf("navigate %s: no %s within %s", shown, event, timeoutText)
			if nav.status != 0 {
				// The document answered: what the page still waited for
				// is a sub-resource (a slow third-party script), named.
				msg = fmt.Sprintf("navigate %s: document status %d (ttfb %s), no %s within %s", shown, nav.status, roundForText(nav.ttfb), event, timeoutText)
				if urls, n := r.tab.events.pendingURLs(3); n > 0 {
					msg += "; still loading: " + strings.Join(urls, ", ")
					if n > len(urls) {
						msg += fmt.Sprintf(" and %d more", n-len(urls))
					}
				}
			}
			o := r.waitFail(ctx, err, "navigate "+shown, msg)
			if we, ok := o.err.(*waitErr); ok {
				we.load = true
			}
			o.url = u
			if nav.status != 0 {
				o.status, o.url, o.ttfb = nav.status, nav.url, nav.ttfb
			}
			return o
		}
		o := outcome{url: u, status: nav.status, ttfb: nav.ttfb}
		if nav.url != "" {
			o.url = nav.url
		}
		m, merr := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](metricsJS, chromedp.EvalAwaitPromise))
		if merr == nil {
			o.metrics = m
			if v, ok := m["ttfb_ms"]; ok && v > 0 {
				o.ttfb = time.Duration(v * float64(time.Millisecond))
				o.phases = navPhases(m)
			}
		}
		if o.status >= 400 {
			o.cause = checks.CauseStatus
			o.err = fmt.Errorf("navigate %s: document status %d", shown, o.status)
			o.assertions = append(o.assertions, checks.AssertionResult{Name: "status", OK: false, Got: fmt.Sprint(o.status), Want: "< 400"})
		}
		return o

	case b.Click != nil:
		raw, err := x(*b.Click)
		if err != nil {
			return failf("click: %w", err)
		}
		sel, o, bad := r.selector(ctx, "click", raw)
		if bad {
			return o
		}
		at, _, o, ok := r.waitActionable(ctx, fr, "click", sel, needVisible|needEnabled|needHit, timeoutText)
		if !ok {
			return o
		}
		if err := chromedp.Do(ctx, chromedp.MouseClickXY(at.X, at.Y)); err != nil {
			return r.waitFail(ctx, err, "click "+sel.written, fmt.Sprintf("click %s: the page did not take the click within %s", sel, timeoutText))
		}
		return outcome{}

	case b.Type != nil:
		raw, err := x(b.Type.Selector)
		if err != nil {
			return failf("type: %w", err)
		}
		text, err := x(b.Type.Text)
		if err != nil {
			return failf("type: %w", err)
		}
		sel, o, bad := r.selector(ctx, "type", raw)
		if bad {
			return o
		}
		_, sc, o, ok := r.waitActionable(ctx, fr, "type", sel, needVisible|needEnabled|needControl, timeoutText)
		if !ok {
			return o
		}
		if o, ok := r.focus(ctx, sc, "type "+sel.written, sel); !ok {
			return o
		}
		if err := chromedp.Do(ctx, chromedp.KeyEvent(text)); err != nil {
			return r.elementWaitFail(ctx, err, "type "+sel.written, fmt.Sprintf("type %s: the page did not take the keys within %s", sel, timeoutText))
		}
		return outcome{}

	case b.Fill != nil:
		raw, err := x(b.Fill.Selector)
		if err != nil {
			return failf("fill: %w", err)
		}
		text, err := x(b.Fill.Text)
		if err != nil {
			return failf("fill: %w", err)
		}
		sel, o, bad := r.selector(ctx, "fill", raw)
		if bad {
			return o
		}
		_, sc, o, ok := r.waitActionable(ctx, fr, "fill", sel, needVisible|needEnabled|needControl, timeoutText)
		if !ok {
			return o
		}
		return r.fill(ctx, sc, sel, text)

	case b.Extract != nil:
		for _, n := range b.extracts {
			v, o, ok := r.extract(ctx, fr, n, timeoutText)
			if !ok {
				// None of the step's variables keeps an earlier value.
				for _, n := range b.extracts {
					r.vars.unset(n.name)
				}
				return o
			}
			r.vars.set(n.name, v, n.e.Secret || checks.SensitiveName(n.name))
		}
		return outcome{}

	case b.Select != nil:
		raw, err := x(b.Select.Selector)
		if err != nil {
			return failf("select: %w", err)
		}
		val, err := x(b.Select.Value)
		if err != nil {
			return failf("select: %w", err)
		}
		sel, o, bad := r.selector(ctx, "select", raw)
		if bad {
			return o
		}
		_, sc, o, ok := r.waitActionable(ctx, fr, "select", sel, needEnabled|needControl, timeoutText)
		if !ok {
			return o
		}
		res, err := evalIn[string](ctx, sc, pageJS(selectJS, sel.js(), jsString(val)))
		if err != nil {
			return r.waitFail(ctx, err, "select "+sel.written, "")
		}
		if res != "ok" {
			return failf("select %s: %s %q", sel, res, val)
		}
		return outcome{}

	case b.WaitVisible != nil:
		raw, err := x(*b.WaitVisible)
		if err != nil {
			return failf("wait_visible: %w", err)
		}
		sel, o, bad := r.selector(ctx, "wait_visible", raw)
		if bad {
			return o
		}
		if _, _, o, ok := r.waitActionable(ctx, fr, "wait_visible", sel, needVisible, timeoutText); !ok {
			return o
		}
		return outcome{}

	case b.WaitText != nil, b.AssertText != nil:
		m, name := b.WaitText, "wait_text"
		if m == nil {
			m, name = b.AssertText, "assert_text"
		}
		em, err := r.expandMatch(m)
		if err != nil {
			return failf("%s: %w", name, err)
		}
		sel, o, bad := r.selector(ctx, name, em.Selector)
		if bad {
			return o
		}
		// Both wait until the text matches: assert_text, as Playwright's
		// toHaveText, retries within the step's timeout, so that text a
		// script renders after the load event (fetch) is not read too early.
		cond := func(et elementText) bool { ok, _ := em.match(et.Text); return et.Found && ok }
		et, frame, err := r.readText(ctx, fr, sel, cond)
		_, want := em.match(et.Text)
		a := checks.AssertionResult{Name: fmt.Sprintf("text %s", em.Selector), Got: et.Text, Want: want}
		if err != nil && et.stalled && frame == "" {
			o := r.noAnswer(ctx, name+" "+em.Selector, em.Selector, timeoutText, et.answered)
			a.Got = "(no answer)"
			o.assertions = []checks.AssertionResult{a}
			return o
		}
		if err != nil {
			if !et.Found {
				a.Got = "(no element)"
			}
			msg := fmt.Sprintf("%s %s: text %q, want %s, within %s%s", name, em.Selector, et.Text, want, timeoutText, et.several(em.Selector))
			if !et.Found {
				msg = fmt.Sprintf("%s %s: no element within %s", name, em.Selector, timeoutText)
			}
			if frame != "" {
				msg = frameMsg(name+" "+em.Selector, fr, frame, timeoutText)
			}
			o := r.elementWaitFail(ctx, err, name+" "+em.Selector, msg)
			o.assertions = []checks.AssertionResult{a}
			return o
		}
		a.OK, _ = em.match(et.Text)
		o = outcome{assertions: []checks.AssertionResult{a}}
		if !a.OK {
			o.cause, o.err = checks.CauseScript, fmt.Errorf("%s %s: text %q, want %s%s", name, em.Selector, et.Text, want, et.several(em.Selector))
		}
		return o

	case b.AssertTitle != nil, b.AssertURL != nil:
		return r.assertPage(ctx, fr, b, timeoutText)

	case b.Eval != nil:
		js, err := x(b.Eval.JS)
		if err != nil {
			return failf("eval: %w", err)
		}
		sc, o, ok := r.waitScope(ctx, "eval", fr, timeoutText)
		if !ok {
			return o
		}
		raw, err := evalIn[[]byte](ctx, sc, js, chromedp.EvalAwaitPromise)
		if err != nil {
			var ee *chromedp.ExceptionError
			if errors.As(err, &ee) {
				return failf("eval: %s", firstLine(err.Error()))
			}
			return r.waitFail(ctx, err, "eval", "")
		}
		return evalOutcome(b.Eval, raw)

	case b.Screenshot != nil:
		png, err := r.screenshot(ctx)
		if err != nil {
			return r.waitFail(ctx, err, "screenshot", "")
		}
		path, err := r.saveArtifact(png, "")
		if err != nil {
			return outcome{cause: checks.CauseInternal, err: fmt.Errorf("screenshot: %w", err)}
		}
		var arts []string
		if path != "" {
			arts = []string{path}
		}
		return outcome{artifacts: arts}

	case b.Sleep != nil:
		select {
		case <-time.After(*b.Sleep):
			return outcome{}
		case <-ctx.Done():
			return r.waitFail(ctx, ctx.Err(), "sleep", "")
		}

	case b.NoConsoleErrors != nil:
		console, _ := r.tab.events.snapshot()
		a := checks.AssertionResult{Name: "console errors", OK: len(console) == 0, Got: fmt.Sprint(len(console)), Want: "0"}
		if a.OK {
			return outcome{assertions: []checks.AssertionResult{a}}
		}
		a.Got = fmt.Sprintf("%d: %s", len(console), strings.Join(console, "; "))
		return outcome{cause: checks.CauseScript, err: fmt.Errorf("no_console_errors: %d console errors, first: %s", len(console), console[0]), assertions: []checks.AssertionResult{a}}

	case b.MaxFailedRequests != nil:
		_, failed := r.tab.events.snapshot()
		limit := *b.MaxFailedRequests
		a := checks.AssertionResult{Name: "failed requests", OK: len(failed) <= limit, Got: fmt.Sprint(len(failed)), Want: fmt.Sprintf("<= %d", limit)}
		if a.OK {
			return outcome{assertions: []checks.AssertionResult{a}}
		}
		a.Got = fmt.Sprintf("%d: %s", len(failed), strings.Join(failed, "; "))
		return outcome{cause: checks.CauseScript, err: fmt.Errorf("max_failed_requests: %d failed requests, over %d; first: %s", len(failed), limit, failed[0]), assertions: []checks.AssertionResult{a}}
	}
	return outcome{cause: checks.CauseInternal, err: errors.New("browser step without an action")}
}

// navigate loads u in the tab's main frame and waits, within ctx, for its
// load event, its DOMContentLoaded event when until is
// WaitDOMContentLoaded, or its commit (the new document replaced the old)
// when until is WaitCommit. It returns what the events said of the document
// (its status and TTFB, also when ctx ended first), and a
// *chromedp.LoadError when Chromium could not load it.
func (r *run) navigate(ctx context.Context, u, until string) (navState, error) {
	ev := r.tab.events
	ev.startNav(r.tab.mainFrame())
	res, err := chromedp.Call(ctx, page.Navigate, page.NavigateParams{URL: u})
	n, wake := ev.navigation()
	if err != nil {
		return n, err
	}
	if res.ErrorText != "" {
		if res.ErrorText == abortedLoad {
			// A download: the server answered, and Chromium aborted the
			// navigation to hand the response to its download manager.
			// The response's event may come a moment after the answer.
			wait := time.NewTimer(downloadEventWait)
			defer wait.Stop()
		waitResponse:
			for n.status == 0 {
				select {
				case <-ctx.Done():
					break waitResponse
				case <-wait.C:
					break waitResponse
				case <-wake:
					n, wake = ev.navigation()
				}
			}
			if n.status != 0 {
				return n, &downloadErr{status: n.status, mime: n.mime, attach: n.attach}
			}
		}
		return n, &chromedp.LoadError{ErrorText: res.ErrorText}
	}
	if res.LoaderID == "" {
		return n, nil // within the document (a #fragment): no load
	}
	for {
		switch {
		case n.failed != "":
			return n, &chromedp.LoadError{ErrorText: n.failed}
		case n.load, n.dcl && until == WaitDOMContentLoaded, n.committed && until == WaitCommit:
			return n, nil
		case n.stopped && n.status != 0:
			// The frame stopped loading: a document without a page of
			// its own (204, a download), or one whose load event came
			// before its commit was seen.
			return n, nil
		}
		select {
		case <-ctx.Done():
			n, _ = ev.navigation()
			return n, ctx.Err()
		case <-wake:
		}
		n, wake = ev.navigation()
	}
}

// abortedLoad is Chromium's error for a navigation it aborted; after a
// response, that is one it handed to its download manager.
const abortedLoad = "net::ERR_ABORTED"

// downloadEventWait bounds the wait for the response of a navigation that
// Chromium aborted, to tell a download from a failed connection.
const downloadEventWait = 500 * time.Millisecond

// downloadErr is a navigation whose server answered with a download (a
// Content-Disposition: attachment, or a type the browser does not show)
// instead of a page.
type downloadErr struct {
	status       int
	mime, attach string
}

func (e *downloadErr) Error() string {
	what := e.mime
	if e.attach != "" {
		what += ", Content-Disposition: " + e.attach
	}
	return fmt.Sprintf("the server answered %d with a download (%s), not a page; the browser does not save it, the tab stays where it was (check a download with an http step: status, headers, checksum)", e.status, what)
}

// actionableJS tells whether the element a click, type, fill, select or
// wait_visible acts on is ready for it: {state: "ok"} (with x, y: the
// viewport point a click goes to), or why not: "missing", "hidden" (no
// box, or visibility hidden), "disabled" (a disabled form control, also
// inside a disabled fieldset, or aria-disabled="true" on it or an
// ancestor), "offscreen" (no part of it inside the viewport after
// scrolling) or "covered" (another element, named in by, would receive a
// click at its centre). A click would otherwise go through as a no-op on a
// disabled button, or land on an overlay, and only a later step would
// fail. With needControl a label stands for its form control (see findJS).
const actionableJS = `((sel, needVisible, needEnabled, needHit, needControl) => {
  const st = ((sel, needVisible, needEnabled, needHit, needControl) => {
  let el;
  try { el = find(sel, needControl); } catch (e) { return {state: 'missing'}; }
  if (!el) return {state: 'missing'};
  const name = (n) => {
    if (!n || !n.tagName) return 'nothing';
    const tag = n.tagName.toLowerCase();
    if (n.id) return tag + '#' + n.id;
    const cls = (typeof n.className === 'string' ? n.className : '').trim().split(/\s+/).filter(Boolean).slice(0, 2);
    return cls.length ? tag + '.' + cls.join('.') : tag;
  };
  let r = el.getBoundingClientRect();
  if (needVisible) {
    const st = getComputedStyle(el);
    if (r.width === 0 || r.height === 0 || st.visibility === 'hidden' || st.visibility === 'collapse') return {state: 'hidden'};
  }
  if (needEnabled && (el.matches(':disabled') || el.closest('[aria-disabled="true"]'))) return {state: 'disabled'};
  if (!needHit) return {state: 'ok'};
  if (r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth) {
    el.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
    r = el.getBoundingClientRect();
  }
  const left = Math.max(r.left, 0), top = Math.max(r.top, 0);
  const right = Math.min(r.right, innerWidth), bottom = Math.min(r.bottom, innerHeight);
  if (right <= left || bottom <= top) return {state: 'offscreen'};
  const x = (left + right) / 2, y = (top + bottom) / 2;
  let hit = document.elementFromPoint(x, y);
  // Into open shadow roots: the document sees their host.
  for (let i = 0; hit && hit !== el && hit.shadowRoot && i < 32; i++) {
    const inner = hit.shadowRoot.elementFromPoint(x, y);
    if (!inner || inner === hit) break;
    hit = inner;
  }
  if (hit && (hit === el || el.contains(hit))) return {state: 'ok', x: x, y: y};
  return {state: 'covered', by: name(hit)};
  })(sel, needVisible, needEnabled, needHit, needControl);
  if (st.state !== 'ok' && st.state !== 'missing') st.count = ` + countJS + `;
  return st;
})(%s, %t, %t, %t, %t)`

// actionState is actionableJS's answer.
type actionState struct {
	State string  `json:"state"`
	By    string  `json:"by"`
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	Count int     `json:"count"` // elements a CSS selector matched, when not ready; 0 for a text selector
}

// frameHitJS tells whether a click at a point of the page (x, y) reaches
// the iframe sel finds, as actionableJS does inside the frame: "ok",
// "offscreen", or "covered" by an element of the page over the iframe.
const frameHitJS = `((sel, x, y) => {
  if (x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) return {state: 'offscreen'};
  const f = find(sel), h = document.elementFromPoint(x, y);
  if (!h || h === f) return {state: 'ok'};
  const cls = (typeof h.className === 'string' ? h.className : '').trim().split(/\s+/).filter(Boolean).slice(0, 2);
  const tag = h.tagName.toLowerCase();
  return {state: 'covered', by: h.id ? tag + '#' + h.id : (cls.length ? tag + '.' + cls.join('.') : tag)};
})(%s, %v, %v)`

// What waitActionable waits for, besides the element being there.
const (
	needVisible = 1 << iota // it has a box and is not visibility: hidden
	needEnabled             // not disabled (see actionableJS)
	needHit                 // a click at its centre reaches it
	needControl             // a label found stands for its form control
)

// waitActionable polls, every pollInterval within the step's time, until
// the element sel finds is there and, as need asks, visible, enabled and
// the one a click at its centre would reach (see actionableJS). When the
// time runs out the step fails (cause script) saying what was still
// wrong, e.g. "click #b: not enabled within 3s" or "click #b: covered by
// div#overlay within 3s", "wait_visible #b: no element within 3s".
func (r *run) waitActionable(ctx context.Context, fr *selector, action string, sel selector, need int, timeoutText string) (actionState, scope, outcome, bool) {
	what := action + " " + sel.written
	js := pageJS(actionableJS, sel.js(), need&needVisible != 0, need&needEnabled != 0, need&needHit != 0, need&needControl != 0)
	var last actionState
	// prev is the point of the last poll that found the element ready in
	// a frame: a click in a frame waits until two polls agree on it, for
	// the browser, which routes the click into the frame, to know where
	// the frame moved when scrolling brought it into view.
	var prev *actionState
	// stalled: the time ran out during a question to the page that had
	// gone unanswered for stallAfter or more, or the page answered nothing
	// at all (see noAnswer). asked: when the page was asked the question
	// it has not answered yet.
	stalled, answered, asked := false, false, time.Time{}
	for {
		asked = time.Now()
		sc, frame, err := r.scopeOf(ctx, fr, need&needHit != 0)
		var st actionState
		if err == nil && frame != "" {
			st.State = frame
		} else if err == nil {
			asked = time.Now()
			st, err = evalIn[actionState](ctx, sc, js)
			if err != nil && sc.t != nil && ctx.Err() == nil && !r.tab.browserDead() {
				// The frame's process went away: find it anew.
				r.tab.forgetFrame(sc.t)
				st, err = actionState{State: frameNoDoc}, nil
			}
		}
		if err == nil {
			answered, asked = true, time.Now()
		}
		switch {
		case err == nil:
			// cut: the step's time ran out during this poll's questions
			// about the frame (below), so the poll found nothing.
			cut := false
			if st.State == "ok" && fr != nil && need&needHit != 0 {
				// Scrolling the element into view in the frame may have
				// scrolled the page: where the frame is now.
				var hit actionState
				sc, frame, err = r.scopeOf(ctx, fr, false)
				if err == nil && frame == "" {
					st.X += sc.x
					st.Y += sc.y
					asked = time.Now()
					hit, err = chromedp.Run(ctx, chromedp.Evaluate[actionState](pageJS(frameHitJS, fr.js(), st.X, st.Y)))
				}
				switch {
				case err != nil && ctx.Err() != nil:
					// A question cut short by the deadline says nothing of
					// the frame: what the polls before found stands (the
					// frame's document was there a moment ago), or the page
					// stopped answering.
					cut = true
					stalled = time.Since(asked) >= stallAfter
				case err != nil:
					// The page or the frame is between documents (a
					// navigation): find the frame anew.
					st.State = frameNoDoc
				case frame != "":
					st.State = frame
				case hit.State != "ok":
					st.State, st.By = hit.State, hit.By
				default:
					if p := prev; p == nil || math.Abs(p.X-st.X) > 0.5 || math.Abs(p.Y-st.Y) > 0.5 {
						at := st
						prev = &at
						st.State = "moving"
					}
				}
			}
			if st.State == "ok" && !cut {
				return st, sc, outcome{}, true
			}
			if st.State != "moving" && !cut {
				prev = nil
				last = st
			}
		case ctx.Err() != nil:
			stalled = !answered || time.Since(asked) >= stallAfter
		case r.tab.browserDead():
			return last, sc, r.waitFail(ctx, err, what, ""), false
		default:
			var ee *chromedp.ExceptionError
			if errors.As(err, &ee) {
				return last, sc, failf("%s: %s", what, firstLine(err.Error())), false
			}
			// A navigation replaced the document while it was asked: ask
			// the new one.
		}
		select {
		case <-ctx.Done():
			if stalled {
				return last, scope{}, r.noAnswer(ctx, what, sel.written, timeoutText, answered), false
			}
			var msg string
			switch last.State {
			case "missing":
				// wait_visible too: "not visible" would send the reader
				// looking for CSS that hides an element that is not there.
				msg = fmt.Sprintf("%s: no element within %s", what, timeoutText)
			case "hidden":
				msg = fmt.Sprintf("%s: not visible within %s%s", what, timeoutText, several(sel.written, last.Count))
			case "disabled":
				msg = fmt.Sprintf("%s: not enabled within %s%s", what, timeoutText, several(sel.written, last.Count))
			case "offscreen":
				msg = fmt.Sprintf("%s: not scrolled into view within %s%s", what, timeoutText, several(sel.written, last.Count))
			case "covered":
				msg = fmt.Sprintf("%s: covered by %s within %s%s", what, last.By, timeoutText, several(sel.written, last.Count))
			case frameMissing, frameNoDoc:
				msg = frameMsg(what, fr, last.State, timeoutText)
			default:
				if strings.HasPrefix(last.State, frameTagPrefx) {
					msg = frameMsg(what, fr, last.State, timeoutText)
					break
				}
				msg = fmt.Sprintf("%s: the page did not answer within %s%s", what, timeoutText, r.unanswered())
				if action == "wait_visible" {
					// As wait_visible always said: what it waited for.
					msg = fmt.Sprintf("%s: not visible within %s", what, timeoutText)
				}
			}
			return last, scope{}, r.elementWaitFail(ctx, ctx.Err(), what, msg), false
		case <-time.After(pollInterval):
		}
	}
}

// maskJS replaces, in a document and its same-origin frames, every
// occurrence of a form of the run's secrets (a JSON array: every form
// checks.Redactor hides, longest first, A-F lower-cased; see
// Redactor.Forms) in the values of input and textarea elements and in text
// (contenteditable included) with as many "•", so that a screenshot does
// not show them, and leaves a function that puts everything back
// (unmaskJS). It returns how many values it changed.
//
// A text matches as Redactor.Redact matches: A-F and a-f compare equal,
// and at each offset the longest form is hidden. The text nodes of a
// document (or shadow root) are matched as one text, in document order,
// so that a secret split across elements (<b>sk_live</b>_4f…) is hidden
// in each of its parts. Text no node holds is not seen: CSS generated
// content (::before, ::after), closed shadow roots, canvas and images.
const maskJS = `((forms) => {
  const K = 4, long = new Map(), short = [];
  for (const f of forms) {
    if (!f) continue;
    if (f.length < K) { short.push(f); continue; }
    const k = f.slice(0, K);
    let l = long.get(k);
    if (!l) long.set(k, l = []);
    l.push(f);
  }
  const fold = (s) => s.replace(/[A-F]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));
  const marks = (s) => {
    const t = fold(s);
    let m = null;
    for (let i = 0; i < t.length;) {
      let n = 0;
      const l = long.get(t.substr(i, K));
      if (l) for (const f of l) { if (t.startsWith(f, i)) { n = f.length; break; } }
      if (!n) for (const f of short) { if (t.startsWith(f, i)) { n = f.length; break; } }
      if (!n) { i++; continue; }
      if (!m) m = new Uint8Array(t.length);
      m.fill(1, i, i + n);
      i += n;
    }
    return m;
  };
  const apply = (s, m, off) => {
    let out = '', changed = false;
    for (let i = 0; i < s.length; i++) {
      if (m[off + i]) { out += '\u2022'; changed = true; } else out += s[i];
    }
    return changed ? out : s;
  };
  const undo = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('input, textarea')) {
      const v = el.value;
      if (typeof v !== 'string' || v === '') continue;
      const m = marks(v);
      if (m) { undo.push([el, 'value', v]); el.value = apply(v, m, 0); }
    }
    const nodes = [];
    let text = '';
    const tw = (root.ownerDocument || root).createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = tw.nextNode(); n; n = tw.nextNode()) {
      const p = n.parentNode && n.parentNode.nodeName;
      if (p === 'SCRIPT' || p === 'STYLE') continue;
      nodes.push([n, text.length]);
      text += n.nodeValue;
    }
    const m = marks(text);
    if (m) {
      for (const [n, off] of nodes) {
        const v = n.nodeValue, h = apply(v, m, off);
        if (h !== v) { undo.push([n, 'nodeValue', v]); n.nodeValue = h; }
      }
    }
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) walk(el.shadowRoot);
      if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {
        try { if (el.contentDocument && el.contentDocument.documentElement) walk(el.contentDocument.documentElement); } catch (e) {}
      }
    }
  };
  if (document.documentElement) walk(document.documentElement);
  window[Symbol.for('vigil.unmask')] = () => { for (const [o, k, v] of undo.reverse()) { try { o[k] = v; } catch (e) {} } };
  return undo.length;
})(%s)`

// unmaskJS undoes maskJS.
const unmaskJS = `(() => { const k = Symbol.for('vigil.unmask'); const f = window[k]; delete window[k]; if (f) f(); return true; })()`

// screenshot captures the tab's viewport as a PNG. The run's secrets are
// hidden in the page while it is captured, as they are in every text the
// run reports: a secret typed into a text field would show in plain text
// otherwise (a password field shows dots, but its value is hidden too).
// They are hidden in every frame (see maskFrames). When they cannot be
// hidden, there is no screenshot.
func (r *run) screenshot(ctx context.Context) ([]byte, error) {
	if secrets := r.secretValues(); len(secrets) > 0 {
		undo, err := r.maskFrames(ctx, secrets)
		defer undo()
		if err != nil {
			return nil, fmt.Errorf("hiding the run's secrets in the page: %w", err)
		}
	}
	return chromedp.Run(ctx, chromedp.CaptureScreenshot())
}

// blankJS, called on an iframe element, hides its box (the page behind it
// shows) and returns a function that shows it again.
const blankJS = `function() {
  const el = this, v = el.style.getPropertyValue('visibility'), p = el.style.getPropertyPriority('visibility');
  el.style.setProperty('visibility', 'hidden', 'important');
  return () => el.style.setProperty('visibility', v, p);
}`

// maskFrames runs maskJS in every document of the tab: the page (which
// reaches its same-origin frames and open shadow roots), every frame of
// another origin in the page's process (same site, another port: its own
// JavaScript context), and every iframe of another site, which Chromium
// runs in a process of its own (a target vigil attaches to). A frame that
// cannot be masked (its document does not answer, or vigil cannot attach
// to it) has its iframe element hidden while the screenshot is taken, so
// that the page behind shows instead of the frame. It returns the function
// that puts everything back, and an error when the page itself, or an
// iframe that could not be masked nor hidden, could not be.
func (r *run) maskFrames(ctx context.Context, secrets []string) (func(), error) {
	list, _ := json.Marshal(secrets)
	js := fmt.Sprintf(maskJS, list)
	var undo []func()
	restore := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](js)); err != nil {
		return restore, err
	}
	undo = append(undo, func() { _, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](unmaskJS)) })
	var unmasked []cdp.FrameID
	main := r.tab.mainFrame()
	r.tab.events.mu.Lock()
	contexts := make(map[cdp.FrameID]string, len(r.tab.events.contexts))
	for id, u := range r.tab.events.contexts {
		if id != main {
			contexts[id] = u
		}
	}
	r.tab.events.mu.Unlock()
	for id, u := range contexts {
		sc := scope{uctx: u}
		if err := maskIn(ctx, sc, js); err != nil {
			unmasked = append(unmasked, id)
			continue
		}
		undo = append(undo, func() { _, _ = evalIn[bool](ctx, sc, unmaskJS) })
	}
	targets, failed, err := r.tab.frameTargetsNow(ctx)
	if err != nil {
		return restore, fmt.Errorf("listing the page's iframes: %w", err)
	}
	unmasked = append(unmasked, failed...)
	for id, ft := range targets {
		sc := scope{t: ft}
		if err := maskIn(ctx, sc, js); err != nil {
			unmasked = append(unmasked, id)
			continue
		}
		undo = append(undo, func() { _, _ = evalIn[bool](ctx, sc, unmaskJS) })
		// The frame's own process paints the masked text in its own
		// time: the page's screenshot does not wait for it, and under
		// load took the frame as it was before, secret and all. A frame
		// that has not painted a new frame since is hidden instead.
		if err := paintedIn(ctx, sc); err != nil {
			unmasked = append(unmasked, id)
		}
	}
	// The iframes whose documents could not be masked are hidden: their
	// element is in the page, or in the document of another iframe.
	owners := []scope{{}}
	for _, ft := range targets {
		owners = append(owners, scope{t: ft})
	}
	for _, id := range unmasked {
		show, err := blankFrame(ctx, owners, id)
		if err != nil {
			return restore, err
		}
		undo = append(undo, show)
	}
	return restore, nil
}

// maxFrameMask bounds masking one frame's document: a frame busy in a
// script that never yields is hidden instead (see maskFrames). It bounds
// the wait for the frame to paint the masked text too (paintedIn).
const maxFrameMask = time.Second

// paintedJS resolves once the document has rendered two frames: the
// first after a change may have started before it, the second has it.
const paintedJS = `new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(() => ok(true))))`

// paintedIn waits, within maxFrameMask, until the frame sc (an iframe
// Chromium runs in a process of its own) has painted what was changed in
// it. A frame that does not paint (busy, or throttled out of view) fails.
func paintedIn(ctx context.Context, sc scope) error {
	pctx, cancel := context.WithTimeout(ctx, maxFrameMask)
	defer cancel()
	_, err := evalIn[bool](pctx, sc, paintedJS, chromedp.EvalAwaitPromise)
	return err
}

// maskIn runs the masking script js in the frame sc, within maxFrameMask.
func maskIn(ctx context.Context, sc scope, js string) error {
	mctx, cancel := context.WithTimeout(ctx, maxFrameMask)
	defer cancel()
	_, err := evalIn[int](mctx, sc, js)
	return err
}

// blankFrame hides the iframe element of the frame id, looked for in each
// of owners' documents, and returns the function that shows it again. A
// frame that no document owns any more (it went away) needs nothing.
func blankFrame(ctx context.Context, owners []scope, id cdp.FrameID) (func(), error) {
	const group = "vigil-blank"
	for _, sc := range owners {
		own, err := callIn(ctx, sc, dom.GetFrameOwner, dom.GetFrameOwnerParams{FrameID: id})
		if err != nil || own.BackendNodeID == 0 {
			continue
		}
		node, err := callIn(ctx, sc, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: own.BackendNodeID, ObjectGroup: group})
		if err != nil || node.Object == nil || node.Object.ObjectID == "" {
			return func() {}, fmt.Errorf("an iframe could not be masked, nor hidden: %v", err)
		}
		res, err := callIn(ctx, sc, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
			FunctionDeclaration: blankJS, ObjectID: node.Object.ObjectID, ObjectGroup: group})
		if err != nil || res.ExceptionDetails != nil || res.Result == nil || res.Result.ObjectID == "" {
			return func() {}, fmt.Errorf("an iframe could not be masked, nor hidden: %v", err)
		}
		show := res.Result.ObjectID
		return func() {
			_, _ = callIn(ctx, sc, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
				FunctionDeclaration: "function() { this(); }", ObjectID: show})
			_, _ = callIn(ctx, sc, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: group})
		}, nil
	}
	return func() {}, nil
}

// secretValues returns every form of the run's secrets that its messages
// hide (base64, percent- and HTML-escaped, upper- and lower-cased, …),
// longest first, A-F lower-cased (see checks.Redactor.Forms): what a
// screenshot hides.
func (r *run) secretValues() []string {
	return r.vars.red.Forms()
}

// selector parses an action's selector (variables expanded), and asks the
// page's querySelector once whether a CSS selector parses, so that a
// selector Chromium rejects fails the step at once (cause script) instead
// of after the step's whole timeout. The load-time check catches the
// obvious errors of literal selectors; this one also covers selectors
// built from variables and everything a full CSS parser would reject. When
// the page cannot answer (a navigation in flight), the action goes ahead.
func (r *run) selector(ctx context.Context, action, raw string) (selector, outcome, bool) {
	sel, err := parseSelector(raw)
	if err != nil {
		return sel, failf("%s: %w", action, err), true
	}
	if sel.css == "" {
		return sel, outcome{}, false
	}
	msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(selectorJS, jsString(sel.css))))
	if err != nil || msg == "" {
		return sel, outcome{}, false
	}
	return sel, failf("%s: %w %q: %s", action, ErrInvalidSelector, sel.written, msg), true
}

// focus gives the keyboard focus to the form control sel finds (a label:
// its control), as a user's click into it would.
func (r *run) focus(ctx context.Context, sc scope, what string, sel selector) (outcome, bool) {
	const group = "vigil-focus"
	obj, err := evalIn[*runtime.RemoteObject](ctx, sc, pageJS("find(%s, true)", sel.js()), chromedp.EvalObjectGroup(group))
	if err == nil && (obj == nil || obj.ObjectID == "") {
		return failf("%s: the element went away before it was focused", what), false
	}
	if err == nil {
		_, err = callIn(ctx, sc, dom.Focus, dom.FocusParams{ObjectID: obj.ObjectID})
		_, _ = callIn(ctx, sc, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: group})
	}
	if err != nil {
		return r.waitFail(ctx, err, what, fmt.Sprintf("%s: the page did not answer", what)), false
	}
	return outcome{}, true
}

// waitFail turns an action's error into an outcome. When the step's context
// ended, the page never got where the step waited for: a script failure
// with timeoutMsg (the runner turns it into CauseTimeout when the run's own
// deadline passed, and for a navigation also when the step's timeout did). A browser that died is CauseBrowser. Any other error is
// a script failure prefixed with what.
func (r *run) waitFail(ctx context.Context, err error, what, timeoutMsg string) outcome {
	if r.tab.browserDead() {
		return outcome{cause: checks.CauseBrowser, err: fmt.Errorf("%s: browser died: %w", what, err)}
	}
	if ctx.Err() != nil {
		if timeoutMsg == "" && r.limit != "" {
			timeoutMsg = what + ": did not finish within " + r.limit
		} else if timeoutMsg == "" {
			timeoutMsg = what + ": did not finish in time (" + ctx.Err().Error() + ")"
		}
		return outcome{cause: checks.CauseScript, err: &waitErr{what: timeoutMsg}}
	}
	return outcome{cause: checks.CauseScript, err: fmt.Errorf("%s: %w", what, err)}
}

// elementWaitFail is waitFail for a step that waits for an element: when
// its time ran out, the outcome stays a script failure even at the run's
// deadline (the page answered; the element never came).
func (r *run) elementWaitFail(ctx context.Context, err error, what, timeoutMsg string) outcome {
	o := r.waitFail(ctx, err, what, timeoutMsg)
	if we, ok := o.err.(*waitErr); ok {
		we.element = true
	}
	return o
}

// expandMatch returns m with variables expanded.
func (r *run) expandMatch(m *TextMatch) (*TextMatch, error) {
	out := *m
	var err error
	if out.Selector, err = r.vars.expand(m.Selector); err != nil {
		return nil, err
	}
	if m.Equals != nil {
		e, err := r.vars.expand(*m.Equals)
		if err != nil {
			return nil, err
		}
		out.Equals = &e
	}
	if out.Contains, err = r.vars.expand(m.Contains); err != nil {
		return nil, err
	}
	return &out, nil
}

// matchSpec compiles an assert_title/assert_url spec: "~re" is a regex,
// anything else exact (URLs joined to the target first). want describes
// it for messages: `matches regex "/shop$"` (quoted, so that a regex that
// starts with a slash does not read as a doubled delimiter), or the
// quoted value.
func (r *run) matchSpec(spec string, isURL bool) (want string, match func(string) bool, err error) {
	if re, found := strings.CutPrefix(spec, "~"); found {
		rx, err := regexp.Compile(re)
		if err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("matches regex %q", re), rx.MatchString, nil
	}
	v, err := r.vars.expand(spec)
	if err != nil {
		return "", nil, err
	}
	if isURL {
		v = resolveURL(r.target.URL, v)
	}
	return fmt.Sprintf("%q", v), func(got string) bool { return got == v }, nil
}

// assertPage runs assert_title and assert_url. Like Playwright's
// toHaveTitle and toHaveURL they retry, every pollInterval within the
// step's timeout, until the value matches: right after a click that starts
// a navigation the page may still show the old document. When the time
// runs out the step fails (cause script) with the last value seen:
// `assert_url: got "…/login", want matches regex "/dashboard$", within 3s`
// (a URL without userinfo, query values as "…", no fragment).
func (r *run) assertPage(ctx context.Context, fr *selector, b *BrowserStep, timeoutText string) outcome {
	spec, name, js := b.AssertTitle, "title", "document.title"
	if b.AssertURL != nil {
		spec, name, js = b.AssertURL, "url", "location.href"
	}
	what := "assert_" + name
	want, match, err := r.matchSpec(*spec, name == "url")
	if err != nil {
		return failf("%s: %w", what, err)
	}
	// The page's URL is matched whole, and shown as the step's url is:
	// without userinfo, query values as "…", no fragment (an OAuth
	// callback's code, an implicit flow's #access_token).
	show := func(v string) string { return v }
	if name == "url" {
		show = units.RedactURL
	}
	var got, frame string
	seen := false
	for {
		sc, state, err := r.scopeOf(ctx, fr, false)
		if err == nil && state == "" {
			var v string
			if v, err = evalIn[string](ctx, sc, js); err == nil {
				got, seen = v, true
				if match(got) {
					return outcome{assertions: []checks.AssertionResult{{Name: name, OK: true, Got: show(got), Want: want}}}
				}
			} else if sc.t != nil && ctx.Err() == nil && !r.tab.browserDead() {
				r.tab.forgetFrame(sc.t)
			}
		}
		frame = state
		if err != nil && r.tab.browserDead() {
			return r.waitFail(ctx, err, what, "")
		}
		// Any other error: a navigation replaced the document while it
		// was asked. Ask the new one.
		select {
		case <-ctx.Done():
			a := checks.AssertionResult{Name: name, Got: show(got), Want: want}
			msg := fmt.Sprintf("%s: got %q, want %s, within %s", what, show(got), want, timeoutText)
			switch {
			case frame != "" && !seen:
				msg = frameMsg(what, fr, frame, timeoutText)
			case !seen:
				a.Got = "(no answer)"
				msg = fmt.Sprintf("%s: the page did not answer within %s%s", what, timeoutText, r.unanswered())
			case name == "url" && fr == nil:
				if u := r.tab.events.openedURL(); u != "" {
					// A target=_blank link or window.open opened a
					// tab that no step switches to: say so, since the
					// URL the step waited for is likely that tab's.
					msg += fmt.Sprintf("; the page opened %s in a new tab, which the script does not follow (navigate to it: extract the link's href into a variable and navigate: ${var})", u)
				}
			}
			o := r.elementWaitFail(ctx, ctx.Err(), what, msg)
			o.assertions = []checks.AssertionResult{a}
			return o
		case <-time.After(pollInterval):
		}
	}
}

// evalOutcome checks an eval step's JSON value.
func evalOutcome(e *EvalAction, raw []byte) outcome {
	var v any
	gotJSON := "undefined"
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			return failf("eval: value is not JSON: %v", err)
		}
		gotJSON, _ = canonicalJSON(v)
	}
	text := gotJSON
	if s, ok := v.(string); ok {
		text = s
	}
	var as []checks.AssertionResult
	ok := true
	add := func(name string, pass bool, want string) {
		as = append(as, checks.AssertionResult{Name: name, OK: pass, Got: gotJSON, Want: want})
		ok = ok && pass
	}
	if e.Equals != nil {
		add("eval equals", gotJSON == e.equals, e.equals)
	}
	if e.Contains != "" {
		add("eval contains", strings.Contains(text, e.Contains), fmt.Sprintf("contains %q", e.Contains))
	}
	if e.re != nil {
		add("eval regex", e.re.MatchString(text), fmt.Sprintf("matches /%s/", e.Regex))
	}
	if len(as) == 0 {
		add("eval truthy", truthy(v, len(raw) > 0), "truthy")
	}
	o := outcome{assertions: as}
	if !ok {
		o.cause = checks.CauseScript
		for _, a := range as {
			if !a.OK {
				o.err = fmt.Errorf("eval: value %s, want %s", a.Got, a.Want)
				break
			}
		}
	}
	return o
}

// truthy is JavaScript's truthiness of a JSON value.
func truthy(v any, defined bool) bool {
	if !defined {
		return false
	}
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	}
	return true
}

// loadErrorCause maps Chromium's net error text to a failure cause.
func loadErrorCause(text string) checks.Cause {
	switch {
	case strings.Contains(text, "ERR_NAME_NOT_RESOLVED"), strings.Contains(text, "ERR_NAME_RESOLUTION_FAILED"):
		return checks.CauseDNS
	case strings.Contains(text, "ERR_CONNECTION_REFUSED"):
		return checks.CauseConnectRefused
	case strings.Contains(text, "ERR_CONNECTION_TIMED_OUT"):
		return checks.CauseConnectTimeout
	case strings.Contains(text, "ERR_CONNECTION_RESET"), strings.Contains(text, "ERR_CONNECTION_CLOSED"), strings.Contains(text, "ERR_EMPTY_RESPONSE"):
		return checks.CauseReset
	case strings.Contains(text, "ERR_CERT_"):
		return checks.CauseCert
	case strings.Contains(text, "ERR_SSL_"):
		return checks.CauseTLS
	case strings.Contains(text, "ERR_TIMED_OUT"):
		return checks.CauseTimeout
	}
	return checks.CauseConnect
}

// fillJS prepares the element a fill replaces the value of. For a text
// field (input of a type one types into, textarea) and a contenteditable
// element it focuses it and selects its whole content, for the text to be
// inserted in its place: "text" or "editable". An input whose value is not
// typed (date, time, color, range, …) gets the value set and input and
// change fired, as Playwright does: "done", or "malformed" when the input
// does not take it. Anything else is not filled: "missing", "select",
// "checkbox", "radio", "readonly", "nan" (a number field and a text that
// is not a number), "type:<type>" (an input of another type) or
// "tag:<tag>" (not a form field).
const fillJS = `((sel, text) => {
  const el = find(sel, true);
  if (!el) return 'missing';
  const tag = el.tagName.toLowerCase();
  if (tag === 'select') return 'select';
  if (tag === 'input') {
    const type = el.type.toLowerCase();
    const setTypes = ['color', 'date', 'time', 'datetime-local', 'month', 'range', 'week'];
    const typeTypes = ['', 'text', 'email', 'number', 'password', 'search', 'tel', 'url'];
    if (type === 'checkbox' || type === 'radio') return type;
    if (!setTypes.includes(type) && !typeTypes.includes(type)) return 'type:' + type;
    if (el.readOnly) return 'readonly';
    if (setTypes.includes(type)) {
      const v = text.trim();
      el.focus();
      el.value = v;
      if (el.value !== v) return 'malformed';
      el.dispatchEvent(new Event('input', {bubbles: true, composed: true}));
      el.dispatchEvent(new Event('change', {bubbles: true}));
      return 'done';
    }
    if (type === 'number' && text.trim() !== '' && isNaN(Number(text.trim()))) return 'nan';
    el.select();
    el.focus();
    return 'text';
  }
  if (tag === 'textarea') {
    if (el.readOnly) return 'readonly';
    el.selectionStart = 0;
    el.selectionEnd = el.value.length;
    el.focus();
    return 'text';
  }
  if (el.isContentEditable) {
    const range = document.createRange();
    range.selectNodeContents(el);
    const s = getSelection();
    s.removeAllRanges();
    s.addRange(range);
    el.focus();
    return 'editable';
  }
  return 'tag:' + tag;
})(%s, %s)`

// fillDeleteJS deletes the selection fillJS made (fill with an empty
// text), as the Delete key would: the page gets its input event.
const fillDeleteJS = `(() => { document.execCommand('delete'); return true; })()`

// fillChangeJS fires change on the text field a fill changed: a user's
// edit fires it when the field loses focus, which fill, like Playwright's,
// does not take from it.
const fillChangeJS = `((sel) => {
  const el = find(sel, true);
  if (el) el.dispatchEvent(new Event('change', {bubbles: true}));
  return true;
})(%s)`

// fill replaces the value of the field sel names with text (see
// FillAction). The text never appears in its errors: it may hold a secret.
func (r *run) fill(ctx context.Context, sc scope, sel selector, text string) outcome {
	what := "fill " + sel.written
	// For a number field the text is trimmed, as Playwright does.
	res, err := evalIn[string](ctx, sc, pageJS(fillJS, sel.js(), jsString(text)))
	if err != nil {
		return r.waitFail(ctx, err, what, fmt.Sprintf("%s: the page did not answer", what))
	}
	switch {
	case res == "done":
		return outcome{}
	case res == "text" || res == "editable":
	case res == "missing":
		return failf("%s: the element went away before it was filled", what)
	case res == "select":
		return failf("%s: a <select> cannot be filled: use select: {selector, value} to choose its option", what)
	case res == "checkbox", res == "radio":
		return failf("%s: a %s cannot be filled: use click to check it", what, res)
	case res == "readonly":
		return failf("%s: the field is read-only", what)
	case res == "nan":
		return failf("%s: the text is not a number (an input of type number)", what)
	case res == "malformed":
		return failf("%s: the text is not a valid value for this input (its type takes e.g. 2024-05-31, 13:45, #ff0000)", what)
	case strings.HasPrefix(res, "type:"):
		return failf("%s: an input of type %s cannot be filled", what, strings.TrimPrefix(res, "type:"))
	default:
		return failf("%s: a <%s> cannot be filled (want an input, a textarea or a contenteditable element)", what, strings.TrimPrefix(res, "tag:"))
	}
	if text == "" {
		_, err = evalIn[bool](ctx, sc, fillDeleteJS)
	} else {
		_, err = chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: text})
	}
	if err != nil {
		return r.waitFail(ctx, err, what, fmt.Sprintf("%s: the page did not take the text", what))
	}
	if res == "text" {
		if _, err := evalIn[bool](ctx, sc, pageJS(fillChangeJS, sel.js())); err != nil {
			return r.waitFail(ctx, err, what, "")
		}
	}
	return outcome{}
}

// extractJS reads one value of the first element a selector matches:
// {state: "ok", value} or why not: "missing", "noattr" (the element has
// no such attribute), "novalue" (not an input, textarea or select; tag
// names it).
const extractJS = `((sel, what, attr) => {
  const el = find(sel, what === 'value');
  if (!el) return {state: 'missing'};
  const tag = el.tagName.toLowerCase();
  if (what === 'text') return {state: 'ok', value: (el.innerText ?? el.textContent ?? '').trim()};
  if (what === 'attr') return el.hasAttribute(attr) ? {state: 'ok', value: el.getAttribute(attr)} : {state: 'noattr', count: ` + countJS + `};
  if (tag === 'input' || tag === 'textarea' || tag === 'select') return {state: 'ok', value: el.value};
  return {state: 'novalue', tag: tag, count: ` + countJS + `};
})(%s, %s, %s)`

// extractState is extractJS's answer.
type extractState struct {
	State string `json:"state"`
	Value string `json:"value"`
	Tag   string `json:"tag"`
	Count int    `json:"count"` // elements a CSS selector matched, when not "ok"; 0 for a text selector
}

// extract reads one variable of an extract action. An element extractor
// polls, within the step's time, until the element (and its attribute) is
// there; an eval is evaluated once.
func (r *run) extract(ctx context.Context, fr *selector, n namedExtract, timeoutText string) (string, outcome, bool) {
	e, x := n.e, r.vars.expand
	head := "extract " + n.written
	if e.Eval != "" {
		js, err := x(e.Eval)
		if err != nil {
			return "", failf("%s: %w", head, err), false
		}
		sc, o, ok := r.waitScope(ctx, head, fr, timeoutText)
		if !ok {
			return "", o, false
		}
		raw, err := evalIn[[]byte](ctx, sc, js, chromedp.EvalAwaitPromise)
		if err != nil {
			var ee *chromedp.ExceptionError
			if errors.As(err, &ee) {
				return "", failf("%s: eval: %s", head, firstLine(err.Error())), false
			}
			return "", r.waitFail(ctx, err, head+": eval", ""), false
		}
		if len(raw) == 0 || string(raw) == "null" {
			v := "undefined"
			if len(raw) > 0 {
				v = "null"
			}
			return "", failf("%s: eval: the value is %s", head, v), false
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, outcome{}, true
		}
		return string(raw), outcome{}, true
	}
	what, rawSel, attr := "text", e.Text, ""
	switch {
	case e.Value != "":
		what, rawSel = "value", e.Value
	case e.Attr != nil:
		what, rawSel = "attr", e.Attr.Selector
		var err error
		if attr, err = x(e.Attr.Name); err != nil {
			return "", failf("%s: %w", head, err), false
		}
	}
	expanded, err := x(rawSel)
	if err != nil {
		return "", failf("%s: %w", head, err), false
	}
	sel, o, bad := r.selector(ctx, head, expanded)
	if bad {
		return "", o, false
	}
	head += " from " + sel.written
	js := pageJS(extractJS, sel.js(), jsString(what), jsString(attr))
	var last extractState
	for {
		sc, frame, err := r.scopeOf(ctx, fr, false)
		var st extractState
		if err == nil && frame != "" {
			st.State = frame
		} else if err == nil {
			st, err = evalIn[extractState](ctx, sc, js)
			if err != nil && sc.t != nil && ctx.Err() == nil && !r.tab.browserDead() {
				r.tab.forgetFrame(sc.t)
				st, err = extractState{State: frameNoDoc}, nil
			}
		}
		switch {
		case err == nil:
			switch st.State {
			case "ok":
				return st.Value, outcome{}, true
			case "novalue":
				return "", failf("%s: a <%s> has no value (want an input, a textarea or a select; for other elements use text)%s", head, st.Tag, several(sel.written, st.Count)), false
			}
			last = st
		case ctx.Err() != nil:
		case r.tab.browserDead():
			return "", r.waitFail(ctx, err, head, ""), false
		default:
			var ee *chromedp.ExceptionError
			if errors.As(err, &ee) {
				return "", failf("%s: %s", head, firstLine(err.Error())), false
			}
			// A navigation replaced the document while it was asked: ask
			// the new one.
		}
		select {
		case <-ctx.Done():
			var msg string
			switch last.State {
			case "missing":
				msg = fmt.Sprintf("%s: no element within %s", head, timeoutText)
			case "noattr":
				msg = fmt.Sprintf("%s: no attribute %s within %s%s", head, attr, timeoutText, several(sel.written, last.Count))
			case frameMissing, frameNoDoc:
				msg = frameMsg(head, fr, last.State, timeoutText)
			default:
				if strings.HasPrefix(last.State, frameTagPrefx) {
					msg = frameMsg(head, fr, last.State, timeoutText)
					break
				}
				msg = fmt.Sprintf("%s: the page did not answer within %s%s", head, timeoutText, r.unanswered())
			}
			return "", r.elementWaitFail(ctx, ctx.Err(), head, msg), false
		case <-time.After(pollInterval):
		}
	}
}
