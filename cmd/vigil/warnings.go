package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
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
