package proxy

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Reasons of vigil_proxy_client_connections_cut_total: why an engine ended
// an HTTP/1 client connection that had no whole request head to serve
// (net/http's: stdcut.go).
const (
	// cutHeaderTimeout: a head was begun but not whole within
	// read_header_timeout (a slow client, or slowloris dripping bytes).
	cutHeaderTimeout = "header_timeout"
	// cutNoRequest: a new connection sent no byte within
	// read_header_timeout (an idle connection flood, or a browser's unused
	// preconnect).
	cutNoRequest = "no_request"
	// cutIdle: a kept-alive connection sent no next request within
	// idle_timeout, the normal end of keep-alive.
	cutIdle = "idle"
	// cutClosedInHead: the client closed or reset the connection in the
	// middle of a head.
	cutClosedInHead = "closed_in_head"
)

var cutReasons = []string{cutHeaderTimeout, cutNoRequest, cutIdle, cutClosedInHead}

// clientCuts counts the connections the engines end without a request to
// serve, and logs the timeouts among them at most once a minute per
// reason with the count held back: a thousand slowloris connections cut at
// read_header_timeout show as one line, as HAProxy's 408 "cR" and nginx's
// "client timed out" show them, instead of nothing or a thousand lines.
// The end of an idle keep-alive connection and a client closing mid-head
// are only counted.
type clientCuts struct {
	count  map[string]prometheus.Counter // by reason, each created at 0
	log    *slog.Logger
	header units.Spacer // header_timeout lines
	none   units.Spacer // no_request lines
}

func newClientCuts(reg prometheus.Registerer, log *slog.Logger) (*clientCuts, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vigil_proxy_client_connections_cut_total",
		Help: "HTTP/1 client connections (both engines and listeners) ended with no whole request head to serve, by reason: header_timeout (a head begun but not whole within read_header_timeout: slow clients, slowloris), no_request (a new connection that sent no byte within read_header_timeout), idle (a kept-alive connection that sent no next request within idle_timeout), closed_in_head (the client closed or reset the connection in the middle of a head).",
	}, []string{"reason"})
	if err := reg.Register(vec); err != nil {
		return nil, err
	}
	cc := &clientCuts{count: map[string]prometheus.Counter{}, log: log}
	for _, r := range cutReasons {
		cc.count[r] = vec.WithLabelValues(r)
	}
	return cc, nil
}

// note records one connection ended for reason; timeout is the
// read_header_timeout in force, remote the client's address.
func (cc *clientCuts) note(reason, remote string, tls bool, timeout time.Duration) {
	cc.count[reason].Inc()
	switch reason {
	case cutHeaderTimeout:
		if ok, held := cc.header.Allow(time.Now(), time.Minute); ok {
			cc.log.Warn("proxy: client connection cut off: request head not whole within read_header_timeout (slow client or slowloris)",
				"client", remote, "tls", tls, "read_header_timeout", timeout.String(), "suppressed", held)
		}
	case cutNoRequest:
		if ok, held := cc.none.Allow(time.Now(), time.Minute); ok {
			cc.log.Info("proxy: client connection closed: no request within read_header_timeout",
				"client", remote, "tls", tls, "read_header_timeout", timeout.String(), "suppressed", held)
		}
	}
}
