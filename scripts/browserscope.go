package scripts

import (
	"context"
	"github.com/chromedp/cdproto/cdp"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// scope is the document a browser step acts in: the tab's page, or the
// document of one of its iframes (a step's frame).
type scope struct {
	// t is the target the step's JavaScript runs in; nil: the tab's.
	t *chromedp.Target
	// ctxID is the JavaScript context of the frame's document in t; 0: the
	// target's main one.
	ctxID runtime.ExecutionContextID
	// x, y is where the frame's viewport starts in the tab's viewport, in
	// CSS pixels: what a point in the frame adds for a click.
	x, y float64
}

// evalIn evaluates js in the scope's document.
func evalIn[T any](ctx context.Context, sc scope, js string, opts ...chromedp.EvaluateOption) (T, error) {
	if sc.ctxID != 0 {
		id := sc.ctxID
		opts = append(opts, func(p *runtime.EvaluateParams) { p.ContextID = id })
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
