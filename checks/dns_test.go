package checks_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-synthetics/vigil/checks"
)

// dnsZone is what the test DNS server knows: records by question, and the
// rcode to answer for names it does not know.
var dnsZone = map[string][]string{
	"www.example.test. A": {
		"www.example.test. 300 IN A 192.0.2.10",
		"www.example.test. 300 IN A 192.0.2.11",
	},
	"example.test. MX":          {"example.test. 3600 IN MX 10 mail.example.test."},
	"example.test. TXT":         {`example.test. 300 IN TXT "v=spf1 -all"`},
	"alias.example.test. CNAME": {"alias.example.test. 60 IN CNAME www.example.test."},
}

// knownName reports whether name has records of some type in dnsZone.
func knownName(name string) bool {
	for k := range dnsZone {
		if strings.HasPrefix(k, name+" ") {
			return true
		}
	}
	return false
}

// dnsServer is a real miekg/dns server on 127.0.0.1, listening on the same
// port over UDP and TCP.
type dnsServer struct {
	addr string
	// udpQueries and tcpQueries count the queries each transport got.
	udpQueries, tcpQueries atomic.Int64
	// lastRD is the RD flag of the last query (1 set, 2 clear).
	lastRD atomic.Int32
}

// startDNSServer starts the server. Names in dnsZone are answered with
// their records (authority: the zone's NS, additional: its address);
// "big.example.test" has 40 TXT records, which do not fit the 1232 bytes
// a query advertises, so over UDP the answer is truncated (TC set);
// "refused.example.test" is answered REFUSED; other names NXDOMAIN.
func startDNSServer(t *testing.T) *dnsServer {
	t.Helper()
	s := &dnsServer{}
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		udp := w.LocalAddr().Network() == "udp"
		if udp {
			s.udpQueries.Add(1)
		} else {
			s.tcpQueries.Add(1)
		}
		if r.RecursionDesired {
			s.lastRD.Store(1)
		} else {
			s.lastRD.Store(2)
		}
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		key := q.Name + " " + dns.TypeToString[q.Qtype]
		switch {
		case q.Name == "big.example.test." && q.Qtype == dns.TypeTXT:
			for i := range 40 {
				rr, _ := dns.NewRR(fmt.Sprintf(`big.example.test. 60 IN TXT "record %02d %s"`, i, strings.Repeat("x", 40)))
				m.Answer = append(m.Answer, rr)
			}
		case q.Name == "refused.example.test.":
			m.Rcode = dns.RcodeRefused
		case dnsZone[key] != nil:
			for _, rec := range dnsZone[key] {
				rr, err := dns.NewRR(rec)
				if err != nil {
					panic(err)
				}
				m.Answer = append(m.Answer, rr)
			}
			ns, _ := dns.NewRR("example.test. 3600 IN NS ns1.example.test.")
			glue, _ := dns.NewRR("ns1.example.test. 3600 IN A 192.0.2.53")
			m.Ns = append(m.Ns, ns)
			m.Extra = append(m.Extra, glue)
		case knownName(q.Name):
			// NODATA: the name exists, without records of this type.
		default:
			m.Rcode = dns.RcodeNameError
		}
		if opt := r.IsEdns0(); opt != nil {
			m.SetEdns0(opt.UDPSize(), false)
		}
		if udp {
			size := dns.MinMsgSize
			if opt := r.IsEdns0(); opt != nil {
				size = int(opt.UDPSize())
			}
			m.Truncate(size)
		}
		w.WriteMsg(m)
	})
	var pc net.PacketConn
	var ln net.Listener
	for i := 0; i < 20 && ln == nil; i++ {
		p, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", p.LocalAddr().String())
		if err != nil {
			p.Close() // the port is taken over TCP: try another
			continue
		}
		pc, ln = p, l
	}
	if ln == nil {
		t.Fatal("no port free over both udp and tcp on 127.0.0.1")
	}
	udpSrv := &dns.Server{PacketConn: pc, Handler: handler}
	tcpSrv := &dns.Server{Listener: ln, Handler: handler}
	for _, srv := range []*dns.Server{udpSrv, tcpSrv} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go srv.ActivateAndServe()
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatal("dns server did not start")
		}
		t.Cleanup(func() { srv.Shutdown() })
	}
	s.addr = pc.LocalAddr().String()
	return s
}

// runDNS compiles and runs one dns check against target (a dns:// URL
// for the test server when target is "").
func runDNS(t *testing.T, srv *dnsServer, spec checks.DNSSpec, e checks.Expect, timeout time.Duration) checks.Result {
	t.Helper()
	c, err := checks.NewDNS(spec, e, checks.Options{Check: "dns", Timeout: timeout})
	if err != nil {
		t.Fatalf("NewDNS: %v", err)
	}
	return c.Run(context.Background(), checks.Target{Name: "ns", URL: "dns://" + srv.addr})
}

func assertionByName(r checks.Result, name string) (checks.AssertionResult, bool) {
	for _, a := range r.Assertions {
		if a.Name == name {
			return a, true
		}
	}
	return checks.AssertionResult{}, false
}

func TestDNSAnswerAndSectionAssertions(t *testing.T) {
	srv := startDNSServer(t)
	www := checks.DNSSpec{QueryName: "www.example.test", QueryType: "a"}
	cases := []struct {
		name      string
		spec      checks.DNSSpec
		expect    checks.Expect
		ok        bool
		cause     checks.Cause
		errHas    []string
		assertion string
	}{
		{name: "A answered NOERROR", spec: www, ok: true, assertion: "rcode"},
		{name: "regex: a record matches", spec: www, ok: true, assertion: "answer regex",
			expect: checks.Expect{Answer: checks.RecordExpect{Regex: []string{`IN\tA\t192\.0\.2\.11$`}}}},
		{name: "regex: no record matches", spec: www, cause: checks.CauseBody, assertion: "answer regex",
			expect: checks.Expect{Answer: checks.RecordExpect{Regex: []string{`192\.0\.2\.99`}}},
			errHas: []string{`dns answer: no record matches ~192\.0\.2\.99 (expect.answer.regex; 2 records: "www.example.test.\t300\tIN\tA\t192.0.2.10"`}},
		{name: "not_regex: no record matches", spec: www, ok: true, assertion: "answer not_regex",
			expect: checks.Expect{Answer: checks.RecordExpect{NotRegex: []string{`10\.0\.0\.`}}}},
		{name: "not_regex: a record matches", spec: www, cause: checks.CauseBody, assertion: "answer not_regex",
			expect: checks.Expect{Answer: checks.RecordExpect{NotRegex: []string{`192\.0\.2\.11`}}},
			errHas: []string{`dns answer: record "www.example.test.\t300\tIN\tA\t192.0.2.11" matches ~192\.0\.2\.11 (expect.answer.not_regex)`}},
		{name: "all_regex: every record matches", spec: www, ok: true, assertion: "answer all_regex",
			expect: checks.Expect{Answer: checks.RecordExpect{AllRegex: []string{`192\.0\.2\.1[01]$`}}}},
		{name: "all_regex: one record does not", spec: www, cause: checks.CauseBody, assertion: "answer all_regex",
			expect: checks.Expect{Answer: checks.RecordExpect{AllRegex: []string{`192\.0\.2\.10$`}}},
			errHas: []string{`dns answer: record "www.example.test.\t300\tIN\tA\t192.0.2.11" does not match ~192\.0\.2\.10$ (expect.answer.all_regex)`}},
		{name: "not_all_regex: not every record matches", spec: www, ok: true, assertion: "answer not_all_regex",
			expect: checks.Expect{Answer: checks.RecordExpect{NotAllRegex: []string{`192\.0\.2\.10$`}}}},
		{name: "not_all_regex: every record matches", spec: www, cause: checks.CauseBody, assertion: "answer not_all_regex",
			expect: checks.Expect{Answer: checks.RecordExpect{NotAllRegex: []string{`192\.0\.2\.`}}},
			errHas: []string{`dns answer: every record matches ~192\.0\.2\. (expect.answer.not_all_regex; 2 records:`}},
		{name: "authority regex", spec: www, ok: true, assertion: "authority regex",
			expect: checks.Expect{Authority: checks.RecordExpect{Regex: []string{`IN\tNS\tns1\.example\.test\.$`}}}},
		{name: "authority not_regex", spec: www, cause: checks.CauseBody, assertion: "authority not_regex",
			expect: checks.Expect{Authority: checks.RecordExpect{NotRegex: []string{`ns1\.`}}},
			errHas: []string{`dns authority: record "example.test.\t3600\tIN\tNS\tns1.example.test." matches ~ns1\. (expect.authority.not_regex)`}},
		// The OPT pseudo-record of EDNS0 is not one of the additional
		// section's records: every record there is the glue A.
		{name: "additional all_regex without OPT", spec: www, ok: true, assertion: "additional all_regex",
			expect: checks.Expect{Additional: checks.RecordExpect{AllRegex: []string{`^ns1\.example\.test\.\t3600\tIN\tA\t192\.0\.2\.53$`}}}},
		{name: "MX", spec: checks.DNSSpec{QueryName: "example.test.", QueryType: "MX"}, ok: true, assertion: "answer regex",
			expect: checks.Expect{Answer: checks.RecordExpect{Regex: []string{`MX\t10 mail\.example\.test\.$`}}}},
		{name: "TXT", spec: checks.DNSSpec{QueryName: "example.test", QueryType: "TXT"}, ok: true, assertion: "answer regex",
			expect: checks.Expect{Answer: checks.RecordExpect{Regex: []string{`"v=spf1 -all"`}}}},
		{name: "CNAME", spec: checks.DNSSpec{QueryName: "alias.example.test", QueryType: "CNAME"}, ok: true, assertion: "answer regex",
			expect: checks.Expect{Answer: checks.RecordExpect{Regex: []string{`CNAME\twww\.example\.test\.$`}}}},
		{name: "empty answer fails regex and all_regex", spec: checks.DNSSpec{QueryName: "www.example.test", QueryType: "AAAA"},
			cause: checks.CauseBody, assertion: "answer all_regex",
			expect: checks.Expect{Answer: checks.RecordExpect{Regex: []string{`.`}, AllRegex: []string{`.`}, NotRegex: []string{`.`}}},
			errHas: []string{"dns answer: no record matches ~. (expect.answer.regex; no records)"}},
		{name: "NXDOMAIN is not NOERROR", spec: checks.DNSSpec{QueryName: "nope.example.test"}, cause: checks.CauseStatus, assertion: "rcode",
			errHas: []string{"dns rcode NXDOMAIN for nope.example.test A, want NOERROR (expect.rcode)"}},
		{name: "NXDOMAIN accepted by rcode", spec: checks.DNSSpec{QueryName: "nope.example.test"}, ok: true, assertion: "rcode",
			expect: checks.Expect{RCode: []string{"nxdomain"}}},
		{name: "REFUSED", spec: checks.DNSSpec{QueryName: "refused.example.test"}, cause: checks.CauseStatus, assertion: "rcode",
			expect: checks.Expect{RCode: []string{"NOERROR,NXDOMAIN"}},
			errHas: []string{"dns rcode REFUSED for refused.example.test A, want NOERROR, NXDOMAIN (expect.rcode)"}},
		{name: "tcp transport", spec: checks.DNSSpec{QueryName: "www.example.test", Transport: "TCP"}, ok: true, assertion: "rcode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runDNS(t, srv, tc.spec, tc.expect, 5*time.Second)
			if r.OK != tc.ok || r.Cause != tc.cause {
				t.Fatalf("ok=%v cause=%q err=%q, want ok=%v cause=%q\nassertions: %+v", r.OK, r.Cause, r.Err, tc.ok, tc.cause, r.Assertions)
			}
			for _, s := range tc.errHas {
				if !strings.Contains(r.Err, s) {
					t.Errorf("err %q\nwant it to contain %q", r.Err, s)
				}
			}
			a, found := assertionByName(r, tc.assertion)
			if !found {
				t.Fatalf("no assertion %q in %+v", tc.assertion, r.Assertions)
			}
			if tc.ok && !a.OK {
				t.Errorf("assertion %+v failed", a)
			}
			if r.Phases.TTFB <= 0 || r.Phases.Total < r.Phases.TTFB {
				t.Errorf("phases %+v: want a ttfb (the answer's arrival) within total", r.Phases)
			}
		})
	}
}

func TestDNSTruncatedAnswerRetriedOverTCP(t *testing.T) {
	srv := startDNSServer(t)
	r := runDNS(t, srv, checks.DNSSpec{QueryName: "big.example.test", QueryType: "TXT"},
		checks.Expect{Answer: checks.RecordExpect{Regex: []string{`"record 39 x+"`}}}, 5*time.Second)
	if !r.OK {
		t.Fatalf("cause %q: %s\n%+v", r.Cause, r.Err, r.Assertions)
	}
	if r.Proto != "DNS/TCP" {
		t.Errorf("proto %q, want DNS/TCP (the truncated UDP answer asked again over TCP)", r.Proto)
	}
	if u, tc := srv.udpQueries.Load(), srv.tcpQueries.Load(); u != 1 || tc != 1 {
		t.Errorf("udp queries %d, tcp queries %d: want one of each", u, tc)
	}
	if r.Phases.Connect <= 0 {
		t.Errorf("connect phase %s: want the TCP connect of the retry", r.Phases.Connect)
	}
	// The same question over UDP only, to a small answer: no retry.
	r = runDNS(t, srv, checks.DNSSpec{QueryName: "www.example.test"}, checks.Expect{}, 5*time.Second)
	if !r.OK || r.Proto != "DNS/UDP" || srv.tcpQueries.Load() != 1 {
		t.Errorf("small answer: ok=%v proto=%q tcp queries %d, want ok over DNS/UDP and no TCP query", r.OK, r.Proto, srv.tcpQueries.Load())
	}
}

func TestDNSRecursionDesired(t *testing.T) {
	srv := startDNSServer(t)
	no := false
	for _, tc := range []struct {
		rd   *bool
		want int32
	}{{nil, 1}, {&no, 2}} {
		r := runDNS(t, srv, checks.DNSSpec{QueryName: "www.example.test", RecursionDesired: tc.rd}, checks.Expect{}, 5*time.Second)
		if !r.OK || srv.lastRD.Load() != tc.want {
			t.Errorf("recursion_desired %v: ok=%v err=%q, RD seen %d, want %d (1 set, 2 clear)", tc.rd, r.OK, r.Err, srv.lastRD.Load(), tc.want)
		}
	}
}

func TestDNSServerDefaults(t *testing.T) {
	srv := startDNSServer(t)
	host, port, _ := net.SplitHostPort(srv.addr)

	// dns.server names the server; the target, an http origin, names the
	// question: www.example.test.
	c, err := checks.NewDNS(checks.DNSSpec{Server: srv.addr}, checks.Expect{Answer: checks.RecordExpect{Regex: []string{`192\.0\.2\.10`}}}, checks.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Run(context.Background(), checks.Target{Name: "web", URL: "https://www.example.test:8443/healthz"})
	if !r.OK {
		t.Fatalf("server from dns.server, name from the target: cause %q: %s", r.Cause, r.Err)
	}

	// No server at all: the first nameserver of the resolver's file.
	rc := filepath.Join(t.TempDir(), "resolv.conf")
	// The first nameserver, on port 53 (resolv.conf has no port): the run
	// goes there, which answers or, with nothing listening, refuses.
	os.WriteFile(rc, []byte("# test\nnameserver "+host+"\nnameserver 192.0.2.1\noptions ndots:1\n"), 0o644)
	r = checks.RunDNSWithResolvConf(t, checks.DNSSpec{}, checks.Expect{}, rc, checks.Target{Name: "web", URL: "http://www.example.test:" + port})
	if !r.OK && !strings.Contains(r.Err, host+":53") {
		t.Errorf("resolver from the file: cause %q err %q, want the first nameserver %s:53 asked", r.Cause, r.Err, host)
	}
	os.WriteFile(rc, []byte("# nothing\n"), 0o644)
	r = checks.RunDNSWithResolvConf(t, checks.DNSSpec{}, checks.Expect{}, rc, checks.Target{Name: "web", URL: "http://www.example.test"})
	if r.Cause != checks.CauseDNS || !strings.Contains(r.Err, "lists no nameserver") {
		t.Errorf("empty resolver file: cause %q err %q, want dns and the file named", r.Cause, r.Err)
	}

	// A dns:// target without query_name has nothing to ask.
	spec := checks.DNSSpec{}
	if err := spec.TargetFits("dns://" + srv.addr); err == nil || !strings.Contains(err.Error(), "dns.query_name: required") {
		t.Errorf("TargetFits(dns://…) without query_name: %v", err)
	}
	if err := spec.TargetFits("https://www.example.test"); err != nil {
		t.Errorf("TargetFits(https://…): %v", err)
	}
}

func TestDNSConnectionFailures(t *testing.T) {
	// Refused: nothing listens on the port (UDP: ICMP port unreachable).
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := pc.LocalAddr().String()
	pc.Close()
	for _, transport := range []string{"udp", "tcp"} {
		c, err := checks.NewDNS(checks.DNSSpec{QueryName: "www.example.test", Server: dead, Transport: transport}, checks.Expect{}, checks.Options{Timeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		r := c.Run(context.Background(), checks.Target{Name: "ns", URL: "dns://" + dead})
		if r.Cause != checks.CauseConnectRefused || !strings.Contains(r.Err, "connection refused by "+dead) {
			t.Errorf("%s to a dead port: cause %q err %q, want connect_refused naming %s", transport, r.Cause, r.Err, dead)
		}
	}

	// ip_protocol applies to the server dialled over UDP as over TCP.
	for _, transport := range []string{"udp", "tcp"} {
		c, err := checks.NewDNS(checks.DNSSpec{QueryName: "www.example.test", Server: dead, Transport: transport, IPProtocol: "ip6"}, checks.Expect{}, checks.Options{Timeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		r := c.Run(context.Background(), checks.Target{Name: "ns", URL: "dns://" + dead})
		if r.Cause != checks.CauseConnect || !strings.Contains(r.Err, "127.0.0.1 is not an IPv6 address (ip_protocol: ip6)") {
			t.Errorf("%s, ip_protocol ip6 to 127.0.0.1: cause %q err %q, want connect naming the family", transport, r.Cause, r.Err)
		}
	}

	// Timeout: a UDP socket that reads and never answers.
	mute, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := mute.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	const timeout = 1 * time.Second
	c, err := checks.NewDNS(checks.DNSSpec{QueryName: "www.example.test", Server: mute.LocalAddr().String()}, checks.Expect{}, checks.Options{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := c.Run(context.Background(), checks.Target{Name: "ns", URL: "dns://" + mute.LocalAddr().String()})
	took := time.Since(start)
	if r.Cause != checks.CauseTimeout || !strings.Contains(r.Err, "timeout: no answer from dns server "+mute.LocalAddr().String()+" over udp within 1s") {
		t.Errorf("mute server: cause %q err %q, want timeout naming the server", r.Cause, r.Err)
	}
	if took > timeout+3*time.Second {
		t.Errorf("the run took %s, want about its 1s timeout", took)
	}

	// A TCP server that closes without answering: reset.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 2)
			conn.Read(buf)
			conn.Close()
		}
	}()
	c, _ = checks.NewDNS(checks.DNSSpec{QueryName: "www.example.test", Server: ln.Addr().String(), Transport: "tcp"}, checks.Expect{}, checks.Options{Timeout: 3 * time.Second})
	r = c.Run(context.Background(), checks.Target{Name: "ns", URL: "dns://" + ln.Addr().String()})
	if r.Cause != checks.CauseReset {
		t.Errorf("tcp server closing: cause %q err %q, want reset", r.Cause, r.Err)
	}

	// Garbage back over UDP: protocol.
	junk, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer junk.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			_, from, err := junk.ReadFrom(buf)
			if err != nil {
				return
			}
			junk.WriteTo([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"), from)
		}
	}()
	c, _ = checks.NewDNS(checks.DNSSpec{QueryName: "www.example.test", Server: junk.LocalAddr().String()}, checks.Expect{}, checks.Options{Timeout: 3 * time.Second})
	r = c.Run(context.Background(), checks.Target{Name: "ns", URL: "dns://" + junk.LocalAddr().String()})
	if r.Cause != checks.CauseProtocol {
		t.Errorf("junk answer: cause %q err %q, want protocol", r.Cause, r.Err)
	}
}

func TestDNSConfigErrors(t *testing.T) {
	cases := []struct {
		spec   checks.DNSSpec
		expect checks.Expect
		want   string
	}{
		{checks.DNSSpec{QueryType: "AXFRR"}, checks.Expect{}, `dns.query_type: "AXFRR": want a record type`},
		{checks.DNSSpec{QueryClass: "INET"}, checks.Expect{}, `dns.query_class: "INET": want IN, CH, HS, NONE or ANY`},
		{checks.DNSSpec{Transport: "doh"}, checks.Expect{}, `dns.transport: "doh": want "udp", "tcp" or "tcp-tls" (DNS over HTTPS is not supported)`},
		{checks.DNSSpec{Server: "udp://8.8.8.8"}, checks.Expect{}, `dns.server: "udp://8.8.8.8": want host:port (no scheme)`},
		{checks.DNSSpec{Server: "10.0.0.1:99999"}, checks.Expect{}, `dns.server: "10.0.0.1:99999": port "99999": want a number from 1 to 65535`},
		{checks.DNSSpec{QueryName: "a b.example"}, checks.Expect{}, `dns.query_name: "a b.example" is not a domain name`},
		{checks.DNSSpec{IPProtocol: "ipv6"}, checks.Expect{}, `dns.ip_protocol: "ipv6": want "ip4" or "ip6" (write "ip6")`},
		{checks.DNSSpec{}, checks.Expect{RCode: []string{"NOERR"}}, `expect.rcode: "NOERR": want an rcode name (NOERROR, NXDOMAIN, SERVFAIL, REFUSED, …) or number`},
		{checks.DNSSpec{}, checks.Expect{RCode: []string{}}, `expect.rcode: empty list (omit the key for the default NOERROR)`},
		{checks.DNSSpec{}, checks.Expect{Answer: checks.RecordExpect{Regex: []string{"("}}}, `expect.answer.regex[0]: bad regex`},
		{checks.DNSSpec{}, checks.Expect{Authority: checks.RecordExpect{NotRegex: []string{""}}}, `expect.authority.not_regex[0]: empty regex (it matches every record)`},
		{checks.DNSSpec{}, checks.Expect{Additional: checks.RecordExpect{AllRegex: []string{}}}, `expect.additional.all_regex: empty list (omit the key)`},
		{checks.DNSSpec{}, checks.Expect{Status: checks.StatusList{"200"}}, `expect.status: dns checks do not use it`},
		{checks.DNSSpec{}, checks.Expect{CertMinDays: 3}, `expect.cert_min_days: dns checks do not use it`},
	}
	for _, tc := range cases {
		_, err := checks.NewDNS(tc.spec, tc.expect, checks.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v %+v: error %v\nwant it to contain %q", tc.spec, tc.expect, err, tc.want)
		}
	}
	// An http check refuses the dns keys.
	e := checks.Expect{RCode: []string{"NOERROR"}, Answer: checks.RecordExpect{Regex: []string{"x"}}}
	err := e.ValidateFor("http")
	if err == nil || !strings.Contains(err.Error(), "rcode: http checks do not use it") || !strings.Contains(err.Error(), "answer: http checks do not use it") {
		t.Errorf("http with dns keys: %v", err)
	}
	if !errors.Is(err, checks.ErrUnsupported) {
		t.Errorf("%v: want ErrUnsupported", err)
	}
}
