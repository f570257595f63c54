package scripts

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// scope is the document a browser step acts in: the tab's page, or the
// document of one of its iframes (a step's frame).
type scope struct {
	// t is the target the step's JavaScript runs in; nil: the tab's. An
	// iframe of another site runs in its own process, which Chromium
	// shows as a target of its own.
	t *chromedp.Target
	// uctx is the unique id of the JavaScript context of the frame's
	// document in the tab's target; "": the target's main one.
	uctx string
	// x, y is where the frame's viewport starts in the tab's viewport, in
	// CSS pixels: what a point in the frame adds for a click.
	x, y float64
}

// evalIn evaluates js in the scope's document.
func evalIn[T any](ctx context.Context, sc scope, js string, opts ...chromedp.EvaluateOption) (T, error) {
	if sc.uctx != "" {
		id := sc.uctx
		opts = append(opts, func(p *runtime.EvaluateParams) { p.UniqueContextID = id })
	}
	if sc.t != nil {
		return chromedp.Evaluate[T](js, opts...)(ctx, sc.t)
	}
	return chromedp.Run(ctx, chromedp.Evaluate[T](js, opts...))
}

// callIn runs a DevTools command in the scope's target.
func callIn[P, R any](ctx context.Context, sc scope, cmd cdp.Command[P, R], params P) (R, error) {
	if sc.t != nil {
		return cdp.Call(ctx, sc.t, cmd, params)
	}
	return chromedp.Call(ctx, cmd, params)
}

// frameJS finds the iframe a step's frame names in the page: the element,
// or why not: "missing", or "tag:<tag>" for an element that is not an
// iframe.
const frameJS = `((sel) => {
  const el = find(sel);
  if (!el) return 'missing';
  const tag = el.tagName.toLowerCase();
  return (tag === 'iframe' || tag === 'frame') ? el : 'tag:' + tag;
})(%s)`

// frameBoxJS, called on the iframe, returns where its viewport starts in
// the page's viewport (inside its border and padding). With scroll true it
// first scrolls an iframe that is not wholly in the viewport into its
// center, for a click.
const frameBoxJS = `function(scroll) {
  let r = this.getBoundingClientRect();
  if (scroll && (r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth)) {
    this.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
    r = this.getBoundingClientRect();
  }
  const st = getComputedStyle(this);
  return {x: r.left + this.clientLeft + parseFloat(st.paddingLeft), y: r.top + this.clientTop + parseFloat(st.paddingTop)};
}`

// The states of a frame that is not there yet, as scopeOf gives them.
const (
	frameMissing  = "frame:missing" // no element matches the frame selector
	frameNoDoc    = "frame:nodoc"   // the iframe's document is not there (yet)
	frameTagPrefx = "frame:tag:"    // the element is not an iframe: frame:tag:div
)

// scopeOf returns the document a step with the frame fr acts in (fr nil:
// the page). When the frame is not ready it returns the state why (see
// frameMissing), and the step waits on; err is an error of the browser.
// Each call finds the frame anew, so a frame that navigated (a form
// submitted in it) is followed to its new document. With scroll, an iframe
// out of the viewport is scrolled into it (for a click).
func (r *run) scopeOf(ctx context.Context, fr *selector, scroll bool) (scope, string, error) {
	if fr == nil {
		return scope{}, "", nil
	}
	const group = "vigil-frame"
	returnByValue := true
	defer chromedp.Call(ctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: group})
	obj, err := chromedp.Run(ctx, chromedp.Evaluate[*runtime.RemoteObject](pageJS(frameJS, fr.js()), chromedp.EvalObjectGroup(group)))
	if err != nil {
		return scope{}, "", err
	}
	if obj == nil || obj.ObjectID == "" {
		var why string
		if obj != nil {
			_ = json.Unmarshal([]byte(obj.Value), &why)
		}
		if tag, ok := strings.CutPrefix(why, "tag:"); ok {
			return scope{}, frameTagPrefx + tag, nil
		}
		return scope{}, frameMissing, nil
	}
	desc, err := chromedp.Call(ctx, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: obj.ObjectID})
	if err != nil {
		return scope{}, "", err
	}
	if desc.Node == nil || desc.Node.FrameID == "" {
		return scope{}, frameNoDoc, nil
	}
	box, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: frameBoxJS,
		ObjectID:            obj.ObjectID,
		Arguments:           []*runtime.CallArgument{{Value: jsonv2.Value(fmt.Sprint(scroll))}},
		ReturnByValue:       &returnByValue,
	})
	if err != nil {
		return scope{}, "", err
	}
	var at struct{ X, Y float64 }
	if box.Result != nil {
		_ = json.Unmarshal([]byte(box.Result.Value), &at)
	}
	id := desc.Node.FrameID
	if u := r.tab.events.frameContext(id); u != "" {
		return scope{uctx: u, x: at.X, y: at.Y}, "", nil
	}
	// Not in the tab's process: an iframe of another site, which Chromium
	// runs as a target of its own (its target id is the frame's id).
	t, err := r.tab.frameTarget(ctx, id)
	if err != nil {
		return scope{}, "", err
	}
	if t == nil {
		return scope{}, frameNoDoc, nil
	}
	return scope{t: t, x: at.X, y: at.Y}, "", nil
}

// frameTargets are the iframe targets (out-of-process iframes) a tab
// attached to, by frame id.
type frameTargets struct {
	mu sync.Mutex
	m  map[cdp.FrameID]*chromedp.Target
	// attaching holds a channel for each iframe being attached to, closed
	// when that is over: the lock is not held meanwhile, so a slow iframe
	// does not hold up the others.
	attaching map[cdp.FrameID]chan struct{}
}

// frameTarget returns the target of the out-of-process iframe id,
// attaching to it the first time; nil when the browser lists no such
// target (yet).
func (t *tab) frameTarget(ctx context.Context, id cdp.FrameID) (*chromedp.Target, error) {
	for {
		t.frames.mu.Lock()
		if ft := t.frames.m[id]; ft != nil {
			t.frames.mu.Unlock()
			return ft, nil
		}
		if ch, ok := t.frames.attaching[id]; ok {
			t.frames.mu.Unlock()
			select {
			case <-ch:
				continue // attached, or failed: look again
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		ch := make(chan struct{})
		if t.frames.attaching == nil {
			t.frames.attaching = map[cdp.FrameID]chan struct{}{}
		}
		t.frames.attaching[id] = ch
		t.frames.mu.Unlock()
		ft, err := t.attachFrame(ctx, id)
		t.frames.mu.Lock()
		delete(t.frames.attaching, id)
		if ft != nil {
			if t.frames.m == nil {
				t.frames.m = map[cdp.FrameID]*chromedp.Target{}
			}
			t.frames.m[id] = ft
		}
		t.frames.mu.Unlock()
		close(ch)
		return ft, err
	}
}

// attachFrame attaches to the out-of-process iframe id; nil when the
// browser lists no such target.
func (t *tab) attachFrame(ctx context.Context, id cdp.FrameID) (*chromedp.Target, error) {
	infos, err := chromedp.Targets(t.ctx)
	if err != nil {
		return nil, err
	}
	found := false
	for _, info := range infos {
		if info.Type == "iframe" && info.TargetID == target.ID(id) {
			found = true
			break
		}
	}
	if !found {
		return nil, nil
	}
	// The context lives as long as the tab's; cancelling it only detaches
	// (the iframe stays).
	fctx, cancel := chromedp.NewContext(t.ctx, chromedp.WithTargetID(target.ID(id)), chromedp.WithDetachOnCancel(),
		chromedp.WithListener(t.events.countFrame), chromedp.WithListener(t.onAttached))
	// When ctx ends first, the detach goes on in the background; the
	// tab's close ends it in any case.
	if _, err := attachTarget(ctx, fctx, cancel); err != nil {
		if ctx.Err() != nil && err == ctx.Err() {
			return nil, err
		}
		return nil, fmt.Errorf("attaching to the iframe: %w", err)
	}
	return chromedp.FromContext(fctx).Target, nil
}

// frameAttachBudget bounds attaching to an out-of-process iframe the tab
// reported (onAttached).
const frameAttachBudget = 10 * time.Second

// onAttached follows every out-of-process iframe of the tab: Chromium
// attaches them to the tab's session by itself (and nested ones to their
// parent iframe's), but chromedp routes nothing of such a session. vigil
// attaches a session of its own to the iframe at once (frameTarget), which
// enables Runtime, Network and Log in it, so that its console errors and
// failed requests count for no_console_errors and max_failed_requests
// (see pageEvents.countFrame), and screenshots can hide the run's secrets
// in it.
func (t *tab) onAttached(ev any) {
	a, ok := ev.(*target.EventAttachedToTarget)
	if !ok || a.TargetInfo == nil || a.TargetInfo.Type != "iframe" {
		return
	}
	id := cdp.FrameID(a.TargetInfo.TargetID)
	go func() {
		ctx, cancel := context.WithTimeout(t.ctx, frameAttachBudget)
		defer cancel()
		_, _ = t.frameTarget(ctx, id)
	}()
}

// frameTargetsNow attaches to every out-of-process iframe of the tab's
// browser context that the tab has not attached to yet. It returns those
// the browser lists now, by frame id, and the ids of those it could not
// attach to.
func (t *tab) frameTargetsNow(ctx context.Context) (map[cdp.FrameID]*chromedp.Target, []cdp.FrameID, error) {
	c := chromedp.FromContext(t.ctx)
	if c == nil {
		return nil, nil, nil
	}
	infos, err := chromedp.Targets(t.ctx)
	if err != nil {
		return nil, nil, err
	}
	out := map[cdp.FrameID]*chromedp.Target{}
	var failed []cdp.FrameID
	for _, info := range infos {
		if info.Type != "iframe" || info.BrowserContextID != c.BrowserContextID {
			continue
		}
		id := cdp.FrameID(info.TargetID)
		actx, cancel := context.WithTimeout(ctx, maxFrameMask)
		ft, err := t.frameTarget(actx, id)
		cancel()
		switch {
		case err != nil:
			failed = append(failed, id)
		case ft != nil:
			out[id] = ft
		}
	}
	return out, failed, nil
}

// forgetFrame drops the target of an out-of-process iframe that stopped
// answering (it navigated away, or to the page's site, which brings it
// back into the page's process).
func (t *tab) forgetFrame(ft *chromedp.Target) {
	if ft == nil {
		return
	}
	t.frames.mu.Lock()
	defer t.frames.mu.Unlock()
	for id, x := range t.frames.m {
		if x == ft {
			delete(t.frames.m, id)
		}
	}
}

// frameMsg is the error of a step whose frame was not ready when its time
// ran out (state from scopeOf).
func frameMsg(what string, fr *selector, state, timeoutText string) string {
	switch {
	case state == frameMissing:
		return fmt.Sprintf("%s: frame %s: no element within %s", what, fr, timeoutText)
	case strings.HasPrefix(state, frameTagPrefx):
		return fmt.Sprintf("%s: frame %s: a <%s>, not an iframe", what, fr, strings.TrimPrefix(state, frameTagPrefx))
	}
	return fmt.Sprintf("%s: frame %s: its document did not load within %s", what, fr, timeoutText)
}

// waitScope waits, within the step's time, until the step's frame is
// there with its document (see scopeOf), for the actions that do not poll
// on their own (eval, assert_title, assert_url).
func (r *run) waitScope(ctx context.Context, what string, fr *selector, timeoutText string) (scope, outcome, bool) {
	var last string
	for {
		sc, state, err := r.scopeOf(ctx, fr, false)
		switch {
		case err == nil && state == "":
			return sc, outcome{}, true
		case err == nil:
			last = state
		case r.tab.browserDead():
			return sc, r.waitFail(ctx, err, what, ""), false
		}
		select {
		case <-ctx.Done():
			return sc, r.elementWaitFail(ctx, ctx.Err(), what, frameMsg(what, fr, last, timeoutText)), false
		case <-time.After(pollInterval):
		}
	}
}
