package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// warnTo returns the function that prints a config warning as every
// one-shot command (validate, check, grafana, alerter --prometheus-rules)
// prints it: "warning: FILE:LINE: key: …" on w, one line each, as the
// README shows. Long-running commands log them through slog instead.
func warnTo(w io.Writer) func(string) {
	return func(msg string) { fmt.Fprintln(w, "warning: "+msg) }
}

// warnPosition is the "FILE:LINE: " or "FILE:LINE:COL: " (or "FILE: ")
// before a warning's key.
var warnPosition = regexp.MustCompile(`^(?:\d+:){0,2} ?`)

// checkIgnores are the sections vigil check does not use: it sends no
// alert, judges no SLO, writes no store, serves no page, API or probe
// endpoint, and runs no proxy. Warnings about them are left out of its
// output (vigil validate prints them).
var checkIgnores = []string{"alerting", "slos", "store", "status_page", "proxy", "agent.probe", "agent.admin_token", "agent.listen"}

// forCheck returns warn, but for the warnings about the keys of file that
// vigil check does not use (checkIgnores): a one-shot CI run is told about
// its checks, targets, TLS settings, the file's permissions and the
// environment, not about receivers it never calls.
func forCheck(file string, warn func(string)) func(string) {
	return func(msg string) {
		rest, ok := strings.CutPrefix(msg, file+":")
		if ok {
			rest = warnPosition.ReplaceAllString(rest, "")
			for _, s := range checkIgnores {
				if rest == s || strings.HasPrefix(rest, s+".") || strings.HasPrefix(rest, s+":") ||
					strings.HasPrefix(rest, s+"[") || strings.HasPrefix(rest, s+" ") {
					return
				}
			}
		}
		warn(msg)
	}
}

// warnHandler is the slog handler of a one-shot command's run-time log
// (vigil check's browser): records at Warn and above, each printed as a
// config warning is, "warning: MESSAGE key=value …" (errors "error: …"),
// without the time and level of a log line.
type warnHandler struct {
	w     io.Writer
	mu    *sync.Mutex
	attrs []slog.Attr
	group string
}

var _ slog.Handler = warnHandler{}

func newWarnHandler(w io.Writer) warnHandler { return warnHandler{w: w, mu: new(sync.Mutex)} }

func (h warnHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h warnHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("warning: ")
	if r.Level >= slog.LevelError {
		b.Reset()
		b.WriteString("error: ")
	}
	b.WriteString(r.Message)
	add := func(a slog.Attr) {
		if a.Equal(slog.Attr{}) {
			return
		}
		key := a.Key
		v := a.Value.String()
		if v == "" || strings.ContainsAny(v, " \t\n\"=") {
			v = strconv.Quote(v)
		}
		fmt.Fprintf(&b, " %s=%s", key, v)
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(func(a slog.Attr) bool { add(h.qualify(a)); return true })
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// qualify puts the handler's group before a's key.
func (h warnHandler) qualify(a slog.Attr) slog.Attr {
	if h.group != "" {
		a.Key = h.group + "." + a.Key
	}
	return a
}

func (h warnHandler) WithAttrs(as []slog.Attr) slog.Handler {
	attrs := slices.Clone(h.attrs)
	for _, a := range as {
		attrs = append(attrs, h.qualify(a))
	}
	h.attrs = attrs
	return h
}

func (h warnHandler) WithGroup(name string) slog.Handler {
	if h.group != "" {
		name = h.group + "." + name
	}
	h.group = name
	return h
}
