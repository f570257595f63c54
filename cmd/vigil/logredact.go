package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
)

// redactHandler is the slog.Handler of vigil's long-running commands (run,
// canary, proxy, alerter, demo): it passes every record's message, and
// every string, error and fmt.Stringer attribute value (in groups too, and
// those bound with Logger.With), through the running config's redactor
// before the handler it wraps formats them, so that values taken from the
// environment show as *** in every log line, as in /healthz. An error
// that quotes a URL from ${INFLUX_URL} is the usual case.
//
// The redactor is set with setLogRedactor when a config is loaded and
// swapped at every reload; before the first, and while the redactor holds
// no secret, records pass through untouched, at no cost.
type redactHandler struct {
	base slog.Handler              // the wrapped handler, without ops
	red  *atomic.Pointer[redactor] // shared by every handler derived from one
	ops  []handlerOp               // With and WithGroup calls, in order
	next atomic.Pointer[boundNext] // base with ops applied, for one redactor
}

// handlerOp is one WithGroup (group != "") or WithAttrs call.
type handlerOp struct {
	group string
	attrs []slog.Attr
}

// boundNext is base with the ops applied, their attributes redacted by red.
type boundNext struct {
	red *redactor
	h   slog.Handler
}

var _ slog.Handler = (*redactHandler)(nil)

// newRedactHandler wraps next; it redacts nothing until setLogRedactor.
func newRedactHandler(next slog.Handler) *redactHandler {
	return &redactHandler{base: next, red: new(atomic.Pointer[redactor])}
}

// setLogRedactor makes log's handler, when it is a redactHandler (and
// every logger derived from log), redact with red from now on. Other
// loggers are left alone.
func setLogRedactor(log *slog.Logger, red *redactor) {
	if log == nil {
		return
	}
	if h, ok := log.Handler().(*redactHandler); ok {
		h.red.Store(red)
	}
}

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.base.Enabled(ctx, l)
}

func (h *redactHandler) Handle(ctx context.Context, r slog.Record) error {
	red := h.red.Load()
	if !red.active() {
		red = nil
	}
	next := h.bound(red)
	if red == nil {
		return next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, red.redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(red, a))
		return true
	})
	return next.Handle(ctx, out)
}

func (h *redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return h.with(handlerOp{attrs: attrs})
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(handlerOp{group: name})
}

func (h *redactHandler) with(op handlerOp) *redactHandler {
	ops := make([]handlerOp, len(h.ops), len(h.ops)+1)
	copy(ops, h.ops)
	return &redactHandler{base: h.base, red: h.red, ops: append(ops, op)}
}

// bound returns base with the ops applied, their attributes redacted by
// red (nil: as they are). It is built again only when red changes.
func (h *redactHandler) bound(red *redactor) slog.Handler {
	if len(h.ops) == 0 {
		return h.base
	}
	if b := h.next.Load(); b != nil && b.red == red {
		return b.h
	}
	next := h.base
	for _, op := range h.ops {
		if op.group != "" {
			next = next.WithGroup(op.group)
			continue
		}
		attrs := op.attrs
		if red != nil {
			attrs = make([]slog.Attr, len(op.attrs))
			for i, a := range op.attrs {
				attrs[i] = redactAttr(red, a)
			}
		}
		next = next.WithAttrs(attrs)
	}
	h.next.Store(&boundNext{red: red, h: next})
	return next
}

// redactAttr returns a with its value redacted: a string, an error or a
// fmt.Stringer becomes the redacted string (only when redaction changed
// it, so other values keep their type), a group has each of its
// attributes redacted. A LogValuer is resolved first.
func redactAttr(red *redactor, a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); s != "" {
			if r := red.redact(s); r != s {
				return slog.String(a.Key, r)
			}
		}
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, ga := range g {
			out[i] = redactAttr(red, ga)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		var s string
		switch x := v.Any().(type) {
		case error:
			if x == nil {
				return a
			}
			s = x.Error()
		case fmt.Stringer:
			s = x.String()
		default:
			return slog.Attr{Key: a.Key, Value: v}
		}
		if r := red.redact(s); r != s {
			return slog.String(a.Key, r)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
