package checks

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// needICMP skips (or, with CI=true, fails) a test when this process can
// open no ICMP socket of the family: neither an unprivileged ping socket
// (net.ipv4.ping_group_range) nor a raw one (root or CAP_NET_RAW).
func needICMP(t *testing.T, v6 bool) {
	t.Helper()
	if v6 {
		c, err := net.ListenPacket("udp6", "[::1]:0")
		if err != nil {
			t.Skipf("SKIPPED: this host has no IPv6 loopback (::1): %v", err)
		}
		c.Close()
	}
	var why []string
	for _, n := range icmpNetworks[v6] {
		c, err := listenICMP(n)
		if err == nil {
			c.Close()
			return
		}
		why = append(why, n+": "+err.Error())
	}
	msg := "no ICMP socket can be opened (run as root, grant CAP_NET_RAW, or widen net.ipv4.ping_group_range): " + strings.Join(why, "; ")
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED: " + msg)
}

func newICMP(t *testing.T, spec ICMPSpec, e Expect, timeout time.Duration) *ICMP {
	t.Helper()
	c, err := NewICMP(spec, e, Options{Check: "ping", Timeout: timeout})
	if err != nil {
		t.Fatalf("NewICMP: %v", err)
	}
	return c
}

// A ping of the loopback addresses passes over a real socket, with the
// round trip as ttfb, whatever the payload, ttl and dont_fragment.
func TestICMPEchoLoopback(t *testing.T) {
	tests := []struct {
		name, url, proto string
		spec             ICMPSpec
		v6               bool
	}{
		{name: "ipv4", url: "icmp://127.0.0.1", proto: "ICMP"},
		{name: "ipv4 large payload, ttl, dont_fragment", url: "icmp://127.0.0.1", proto: "ICMP",
			spec: ICMPSpec{PayloadSize: 9000, TTL: 1, DontFragment: true}},
		{name: "ipv4 1-byte payload", url: "icmp://127.0.0.1", proto: "ICMP", spec: ICMPSpec{PayloadSize: 1}},
		{name: "ipv4 host of an http target", url: "http://127.0.0.1:8080/healthz", proto: "ICMP"},
		{name: "ipv6", url: "icmp://[::1]", proto: "ICMPv6", v6: true},
		{name: "ipv6 payload and hop limit", url: "icmp://[::1]", proto: "ICMPv6", v6: true,
			spec: ICMPSpec{PayloadSize: 1200, TTL: 2, IPProtocol: "ip6"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			needICMP(t, tc.v6)
			c := newICMP(t, tc.spec, Expect{TTFB: 2 * time.Second}, 3*time.Second)
			var network string
			c.sent = func(n string, _, _ int, data []byte) {
				network = n
				want := tc.spec.PayloadSize
				if want == 0 {
					want = DefaultICMPPayloadSize
				}
				if len(data) != want {
					t.Errorf("sent %d bytes of data, want %d", len(data), want)
				}
			}
			res := c.Run(context.Background(), Target{Name: "lo", URL: tc.url})
			if !res.OK {
				t.Fatalf("not OK: cause %q: %s", res.Cause, res.Err)
			}
			t.Logf("%s socket: ttfb %v (rtt %v), total %v", network, res.Phases.TTFB, res.Phases.TTFB-res.Phases.Connect, res.Phases.Total)
			if res.Proto != tc.proto {
				t.Errorf("proto %q, want %q", res.Proto, tc.proto)
			}
			p := res.Phases
			if p.TTFB <= 0 || p.TTFB > time.Second || p.Total < p.TTFB || p.TTFB <= p.Connect || p.DNS != 0 || p.TLS != 0 || p.Transfer != 0 {
				t.Errorf("implausible phases %+v", p)
			}
			if len(res.Assertions) != 1 || res.Assertions[0].Name != "ttfb" || !res.Assertions[0].OK {
				t.Errorf("assertions %+v, want ttfb passed", res.Assertions)
			}
		})
	}
}

// A name resolves through the system resolver; ip_protocol picks the
// family, and a name with no address of it fails with cause dns, an IP
// literal of the other family with cause connect.
func TestICMPResolveFamily(t *testing.T) {
	needICMP(t, false)
	res := newICMP(t, ICMPSpec{IPProtocol: "ip4"}, Expect{}, 3*time.Second).Run(context.Background(), Target{URL: "icmp://localhost"})
	if !res.OK || res.Proto != "ICMP" {
		t.Errorf("localhost over ip4: ok %v proto %q cause %q: %s", res.OK, res.Proto, res.Cause, res.Err)
	}
	res = newICMP(t, ICMPSpec{IPProtocol: "ip6"}, Expect{}, 3*time.Second).Run(context.Background(), Target{URL: "icmp://127.0.0.1"})
	if res.Cause != CauseConnect || res.Err != "icmp: 127.0.0.1 is not an IPv6 address (ip_protocol: ip6)" {
		t.Errorf("ipv4 literal under ip6: cause %q: %s", res.Cause, res.Err)
	}
	res = newICMP(t, ICMPSpec{}, Expect{}, 3*time.Second).Run(context.Background(), Target{URL: "icmp://nothing.invalid"})
	if res.Cause != CauseDNS || !strings.HasPrefix(res.Err, "dns: ") {
		t.Errorf(".invalid: cause %q: %s", res.Cause, res.Err)
	}
}

// Config errors name the key; NewICMP prefixes them with icmp. and expect.
func TestICMPConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		spec ICMPSpec
		e    Expect
		want string
		is   error
	}{
		{"payload too large", ICMPSpec{PayloadSize: 70000}, Expect{}, `icmp.payload_size: 70000: want bytes from 0 to 65507 (0 = the default, 28)`, ErrBadValue},
		{"payload negative", ICMPSpec{PayloadSize: -1}, Expect{}, `icmp.payload_size: -1: want bytes from 0 to 65507 (0 = the default, 28)`, ErrBadValue},
		{"ttl", ICMPSpec{TTL: 256}, Expect{}, `icmp.ttl: 256: want a hop count from 1 to 255 (0 or unset = the system's)`, ErrBadValue},
		{"ip_protocol", ICMPSpec{IPProtocol: "ipv4"}, Expect{}, `icmp.ip_protocol: "ipv4": want "ip4" or "ip6" (write "ip4")`, ErrBadValue},
		{"fallback alone", ICMPSpec{IPProtocolFallback: true}, Expect{}, `icmp.ip_protocol_fallback: needs ip_protocol (without it both families are dialled)`, ErrBadValue},
		{"dont_fragment ip6", ICMPSpec{DontFragment: true, IPProtocol: "ip6"}, Expect{}, `icmp.dont_fragment: IPv4 only (IPv6 has no DF bit: its routers never fragment), but ip_protocol is ip6`, ErrConflict},
		{"dont_fragment fallback", ICMPSpec{DontFragment: true, IPProtocol: "ip4", IPProtocolFallback: true}, Expect{}, `icmp.dont_fragment: IPv4 only, but ip_protocol_fallback would ping over IPv6`, ErrConflict},
		{"http expect key", ICMPSpec{}, Expect{Status: StatusList{"200"}}, `expect.status: icmp checks do not use it`, ErrUnsupported},
		{"cert_min_days", ICMPSpec{}, Expect{CertMinDays: 3}, `expect.cert_min_days: icmp checks do not use it`, ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewICMP(tc.spec, tc.e, Options{})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error:\n got %v\nwant %s", err, tc.want)
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
		})
	}
	for _, tc := range []struct {
		spec      ICMPSpec
		url, want string
	}{
		{ICMPSpec{}, "icmp://127.0.0.1:7", `an icmp:// URL has no port (ICMP has none): write icmp://127.0.0.1`},
		{ICMPSpec{}, "icmp://u:p@host.example", `an icmp:// URL carries no user or password (a ping has none to send): remove the "user:…@"`},
		{ICMPSpec{}, "icmp://host.example/x", `an icmp:// URL names a host only, no path or query: write icmp://host.example`},
		{ICMPSpec{DontFragment: true}, "icmp://[::1]", `icmp.dont_fragment: IPv4 only, but the target's host ::1 is an IPv6 address`},
		{ICMPSpec{DontFragment: true}, "icmp://127.0.0.1", ``},
		{ICMPSpec{}, "https://www.example.com:8443/x", ``},
	} {
		got := ""
		if err := tc.spec.TargetFits(tc.url); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("TargetFits(%q):\n got %s\nwant %s", tc.url, got, tc.want)
		}
	}
}

// The echo data starts with a random token and has the size asked.
func TestICMPIdentity(t *testing.T) {
	_, _, a := icmpIdentity(28)
	_, _, b := icmpIdentity(28)
	if len(a) != 28 || string(a[8:19]) != "vigil ping " || string(a[:8]) == string(b[:8]) {
		t.Errorf("data %q and %q", a, b)
	}
	if _, _, d := icmpIdentity(3); len(d) != 3 {
		t.Errorf("3 bytes: %q", d)
	}
}
