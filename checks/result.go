// Package checks runs one-request probes (TCP, TLS, HTTP, DNS, gRPC health,
// ICMP echo)
// against a target,
// times them phase by phase with net/http/httptrace, evaluates the assertion
// vocabulary and reports why a probe failed as one Cause from a closed set.
//
// Checks never schedule themselves: package canary owns every goroutine that
// runs them. A Check is compiled once at config load and Run many times.
package checks

import (
	"context"
	"time"
)

// Check is one compiled probe. Run must honour ctx (the canary gives every run
// a deadline) and must always return a Result, never panic on bad input.
type Check interface {
	Run(ctx context.Context, t Target) Result
}

// Target is one origin a check runs against.
type Target struct {
	// Name is the target's name from the config (`targets[].name`), or the
	// check's URL when the check names a URL directly.
	Name string
	// URL is the origin's base URL: http://host:port, https://host:port,
	// tcp://host:port or tls://host:port; for a dns check also
	// dns://host[:port], the server asked; for an icmp check also
	// icmp://host, the host pinged.
	URL string
}

// Cause names why a run did not pass. The set is closed and documented in the
// README; "" means the run passed.
type Cause string

// The closed set of failure causes. Assertion causes (protocol … duration) mean
// the origin answered and an assertion said no ("failed"); connection causes
// and CauseAgent/CauseBrowserUnavailable/CauseInternal mean the check could
// not complete ("could not run"). CauseAgent and CauseBrowserUnavailable are
// the agent's own trouble (AgentFault): such a run says nothing about the
// target.
const (
	CauseNone               Cause = ""
	CauseDNS                Cause = "dns"
	CauseConnectRefused     Cause = "connect_refused"
	CauseConnectTimeout     Cause = "connect_timeout"
	CauseConnect            Cause = "connect"
	CauseTLS                Cause = "tls"
	CauseCert               Cause = "cert"
	CauseTimeout            Cause = "timeout"
	CauseReset              Cause = "reset"
	CauseProtocol           Cause = "protocol"
	CauseStatus             Cause = "status"
	CauseHeader             Cause = "header"
	CauseBody               Cause = "body"
	CauseJSON               Cause = "json"
	CauseChecksum           Cause = "checksum"
	CauseSize               Cause = "size"
	CauseTTFB               Cause = "ttfb"
	CauseDuration           Cause = "duration"
	CauseScript             Cause = "script"
	CauseBrowser            Cause = "browser"
	CauseBrowserUnavailable Cause = "browser_unavailable"
	CauseAgent              Cause = "agent"
	CauseInternal           Cause = "internal"
	// CausePushMissing: a push check's job sent no successful ping within
	// push.period + push.grace. CausePushFailed: its latest ping reported
	// that the job failed (status=fail). Both judge the job ("failed").
	CausePushMissing Cause = "push_missing"
	CausePushFailed  Cause = "push_failed"
)

// AllCauses lists every Cause in documentation order.
var AllCauses = []Cause{CauseDNS, CauseConnectRefused, CauseConnectTimeout, CauseConnect,
	CauseTLS, CauseCert, CauseTimeout, CauseReset, CauseProtocol, CauseStatus, CauseHeader, CauseBody,
	CauseJSON, CauseChecksum, CauseSize, CauseTTFB, CauseDuration, CauseScript, CauseBrowser,
	CauseBrowserUnavailable, CauseAgent, CauseInternal, CausePushMissing, CausePushFailed}

// SLO reports whether the cause is a service-level assertion (ttfb, duration):
// the request succeeded but was too slow. The canary turns such failures into
// the `degraded` state rather than `unhealthy`.
func (c Cause) SLO() bool { return c == CauseTTFB || c == CauseDuration }

// AgentFault reports whether the cause is the agent's own trouble, not the
// target's: the agent had no resource to open a connection or socket with
// (its open-file limit, a local port, the permission for an ICMP socket:
// CauseAgent), or no browser to run a script in (CauseBrowserUnavailable).
// The canary's state machine does not count such a run (the verdict keeps
// its state and expiry), availability figures leave it out, and the
// alerter's dead_man rule reports a pair that has had only such runs.
func (c Cause) AgentFault() bool { return c == CauseAgent || c == CauseBrowserUnavailable }

// Phases are the timing phases of one request, from httptrace. A phase that
// did not happen (no DNS for an IP literal, no TLS for plain HTTP, a reused
// connection) is zero.
type Phases struct {
	DNS      time.Duration // name resolution
	Connect  time.Duration // TCP connect
	TLS      time.Duration // TLS handshake
	TTFB     time.Duration // request written start → first response byte (from the start of the run)
	Transfer time.Duration // first byte → body fully read
	Total    time.Duration // whole run
}

// AssertionResult is the outcome of one assertion: its name (e.g.
// `status`, `header Content-Type`, `json $.ok`), whether it held, what the
// origin gave and what the config wanted, both as display strings.
type AssertionResult struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	Got  string `json:"got"`
	Want string `json:"want"`
}

// StepResult is the outcome of one script step (package scripts).
type StepResult struct {
	Name       string
	OK         bool
	Skipped    bool // not run because an earlier step failed
	Cause      Cause
	Err        string
	StatusCode int
	URL        string
	Duration   time.Duration
	TTFB       time.Duration
	Assertions []AssertionResult
	// Metrics holds step-specific figures by name, e.g. for browser
	// navigations dom_content_loaded_ms, load_ms, lcp_ms, cls.
	Metrics map[string]float64
}

// Result is the outcome of one run of a check against one target.
type Result struct {
	OK    bool
	Cause Cause  // CauseNone when OK
	Err   string // human-readable reason when not OK

	StatusCode int
	// Proto is the protocol the response came over ("HTTP/1.1",
	// "HTTP/2.0"), for http and grpc checks that got a response; for dns
	// checks "DNS/UDP" or "DNS/TCP" (the transport of the last query: TCP
	// after a truncated UDP answer); for icmp checks "ICMP" or "ICMPv6";
	// "" otherwise.
	Proto      string
	Phases     Phases
	Assertions []AssertionResult
	Steps      []StepResult // scripts only

	// CertExpiry is, for TLS and HTTPS runs, the earliest NotAfter of the
	// certificates the server presented (leaf and intermediates, verified
	// or not), as blackbox_exporter's probe_ssl_earliest_cert_expiry.
	// Zero when no certificate was seen.
	CertExpiry time.Time
	// LastChainExpiry is, over the verified chains (up to a trusted root),
	// the latest of each chain's earliest NotAfter, as blackbox_exporter's
	// probe_ssl_last_chain_expiry_timestamp_seconds. Zero when nothing was
	// verified (insecure_skip_verify, a failed verification, plain HTTP).
	LastChainExpiry time.Time
	// Artifacts are files written by the run (e.g. a failure screenshot),
	// as names relative to <agent.data_dir>/artifacts.
	Artifacts []string
	// Start is when the run began.
	Start time.Time
}

// CouldNotRun reports whether the run failed because the check itself could
// not complete (network, TLS, timeout, browser or internal trouble) rather
// than because an assertion about the origin's answer said no.
func (r Result) CouldNotRun() bool {
	switch r.Cause {
	case CauseNone, CauseProtocol, CauseStatus, CauseHeader, CauseBody, CauseJSON, CauseChecksum,
		CauseSize, CauseTTFB, CauseDuration, CauseCert, CauseScript, CausePushMissing, CausePushFailed:
		return false
	}
	return true
}
