package main

import (
	"fmt"
	"net"
	"net/url"
	"time"
)

// minNewConnInterval is the shortest interval vigil validate accepts
// without a warning for a check that opens a new connection to its target
// at every run (an http check without http.reuse_connections, a tls
// check). At 5 s a target gets 12 new connections (and TLS handshakes) a
// minute from each canary, each region adding as many, plus confirm runs;
// going lower buys little detection: a fast failure is confirmed
// (fall − 1) × the confirm delay (interval ÷ 4, at least 1 s) after the
// first failing run, so 5 s with fall 3 detects within about 7.5 s and 1 s
// within about 3 s, for five times the connections, which origins' rate
// limits and WAFs see as a scanner.
const minNewConnInterval = 5 * time.Second

// maxTimeoutShare is the largest share of the interval a run's timeout
// may take without a warning: the inherited timeout is capped there too
// (canary.Defaults.Timeout). A run its jitter started late (up to 10 % of
// the interval by default) that hangs to a longer timeout is still running
// at its next slot, which is then skipped.
const maxTimeoutShare = 0.8

// probeLoadWarnings warns about checks whose schedule loads their targets
// more than they need (a new connection at every run, below
// minNewConnInterval, unless every target is on a loopback address: the
// load then stays on this machine, as in vigil demo and tests) or leaves no room between runs (a timeout above
// maxTimeoutShare of the interval). See the README's "Choosing interval,
// timeout, rise and fall".
func probeLoadWarnings(f *File) []string {
	var out []string
	for i, c := range f.Checks {
		if c.Disabled || c.Push != nil || c.Interval <= 0 {
			continue
		}
		kind := ""
		switch {
		case c.HTTP != nil && !c.HTTP.ReuseConnections:
			kind = "an http check without http.reuse_connections opens a new connection"
		case c.TLS != nil:
			kind = "a tls check makes a new connection and TLS handshake"
		}
		if kind != "" && c.Interval < minNewConnInterval && !allLoopback(f, c.URL, c.Targets) {
			key := fmt.Sprintf("checks[%d].interval", i)
			if c.Cron != "" {
				key = fmt.Sprintf("checks[%d].cron", i)
			}
			perMin := float64(time.Minute) / float64(c.Interval)
			out = append(out, fmt.Sprintf("%s: runs every %s: %s to each target at every run, %.0f a minute per target from each canary that runs this file (each region adds as many, confirm runs more); below %s that buys seconds of detection for many more connections: use %s or more, or http.reuse_connections: true (see \"Choosing interval, timeout, rise and fall\" in the README)",
				key, c.Interval, kind, perMin, minNewConnInterval, minNewConnInterval))
		}
		if c.Timeout > time.Duration(float64(c.Interval)*maxTimeoutShare) && c.Timeout < c.Interval {
			var jitter time.Duration
			if c.Jitter != nil {
				jitter = time.Duration(c.Jitter.Fraction() * float64(c.Interval))
			}
			out = append(out, fmt.Sprintf("checks[%d].timeout: %s is %.0f%% of the interval %s: a run started up to %s after its slot (jitter) that hangs to its timeout is still running at the next slot, which is skipped (vigil_skipped_runs_total), and a hanging origin takes fall × timeout to confirm; keep timeout at most %.0f%% of the interval (where the inherited one is capped) and above the origin's p99 response time",
				i, c.Timeout, 100*float64(c.Timeout)/float64(c.Interval), c.Interval, jitter, 100*maxTimeoutShare))
		}
	}
	return out
}

// allLoopback reports whether the check's url and every target it names
// are on a loopback address (127.0.0.0/8, ::1, localhost).
func allLoopback(f *File, checkURL string, targets []string) bool {
	var urls []string
	if checkURL != "" {
		urls = append(urls, checkURL)
	}
	for _, name := range targets {
		for _, t := range f.Targets {
			if t.Name == name {
				urls = append(urls, t.URL)
			}
		}
	}
	if len(urls) == 0 {
		return false
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			return false
		}
		h := u.Hostname()
		if ip := net.ParseIP(h); h != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return false
		}
	}
	return true
}
