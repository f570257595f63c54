package checks_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-synthetics/vigil/checks"
)

// rawDNS is a scripted server on 127.0.0.1: every query (over UDP, and
// over TCP on the same port when tcp is set) is answered with the
// messages reply returns for it, as raw bytes, so that a test can send
// what no real DNS server would.
type rawDNS struct {
	addr                   string
	udpQueries, tcpQueries atomic.Int64
}

func startRawDNS(t *testing.T, tcp bool, reply func(q *dns.Msg, raw []byte, overTCP bool) [][]byte) *rawDNS {
	t.Helper()
	s := &rawDNS{}
	var pc net.PacketConn
	var ln net.Listener
	for i := 0; i < 20; i++ {
		p, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if !tcp {
			pc = p
			break
		}
		l, err := net.Listen("tcp", p.LocalAddr().String())
		if err != nil {
			p.Close() // the port is taken over TCP: try another
			continue
		}
		pc, ln = p, l
		break
	}
	if pc == nil {
		t.Fatal("no port free over both udp and tcp on 127.0.0.1")
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			raw := append([]byte(nil), buf[:n]...)
			s.udpQueries.Add(1)
			go func() {
				q := new(dns.Msg)
				if q.Unpack(raw) != nil {
					return
				}
				for _, m := range reply(q, raw, false) {
					pc.WriteTo(m, from)
				}
			}()
		}
	}()
	if ln != nil {
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer conn.Close()
					conn.SetDeadline(time.Now().Add(10 * time.Second))
					var l [2]byte
					if _, err := io.ReadFull(conn, l[:]); err != nil {
						return
					}
					raw := make([]byte, binary.BigEndian.Uint16(l[:]))
					if _, err := io.ReadFull(conn, raw); err != nil {
						return
					}
					s.tcpQueries.Add(1)
					q := new(dns.Msg)
					if q.Unpack(raw) != nil {
						return
					}
					for _, m := range reply(q, raw, true) {
						conn.Write(binary.BigEndian.AppendUint16(nil, uint16(len(m))))
						conn.Write(m)
					}
					io.Copy(io.Discard, conn) // until vigil closes
				}()
			}
		}()
	}
	s.addr = pc.LocalAddr().String()
	return s
}

// pack packs m, failing the test on error.
func pack(m *dns.Msg) []byte {
	b, err := m.Pack()
	if err != nil {
		panic(err)
	}
	return b
}

// answerA is a NOERROR answer to q with one A record for its name.
func answerA(q *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(q)
	rr, _ := dns.NewRR(q.Question[0].Name + " 60 IN A 192.0.2.1")
	m.Answer = append(m.Answer, rr)
	return m
}

func runRawDNS(t *testing.T, s *rawDNS, spec checks.DNSSpec, timeout time.Duration) checks.Result {
	t.Helper()
	c, err := checks.NewDNS(spec, checks.Expect{}, checks.Options{Check: "dns", Timeout: timeout})
	if err != nil {
		t.Fatalf("NewDNS: %v", err)
	}
	return c.Run(context.Background(), checks.Target{Name: "ns", URL: "dns://" + s.addr})
}

// A reply must answer the query asked: QR set, opcode QUERY, the same
// question (the name in any case). A UDP echo service, or a server
// answering another name or type, fails with cause protocol.
func TestDNSReplyMustAnswerTheQuestion(t *testing.T) {
	s := startRawDNS(t, true, func(q *dns.Msg, raw []byte, _ bool) [][]byte {
		name := q.Question[0].Name
		m := answerA(q)
		switch name {
		case "echo.example.test.":
			return [][]byte{raw} // the query itself: ID matches, QR clear
		case "wrongq.example.test.":
			m.Question[0].Name = "other.example.test."
		case "wrongtype.example.test.":
			m.Question[0].Qtype = dns.TypeAAAA
		case "wrongclass.example.test.":
			m.Question[0].Qclass = dns.ClassCHAOS
		case "twoq.example.test.":
			m.Question = append(m.Question, dns.Question{Name: "more.example.test.", Qtype: dns.TypeA, Qclass: dns.ClassINET})
		case "case.example.test.":
			m.Question[0].Name = "CaSe.ExAmPle.TEST."
		case "notify.example.test.":
			m.Opcode = dns.OpcodeNotify
		case "noq.example.test.":
			m.Question = nil
		case "noq-formerr.example.test.":
			m.Question, m.Answer, m.Rcode = nil, nil, dns.RcodeFormatError
		}
		return [][]byte{pack(m)}
	})
	for _, tc := range []struct {
		name   string
		cause  checks.Cause
		errHas string
	}{
		{"echo.example.test", checks.CauseProtocol, "the reply is no DNS answer (the QR bit is clear, as in a query: the query echoed back by a service that is no DNS server?)"},
		{"wrongq.example.test", checks.CauseProtocol, `answered another query (question "other.example.test. IN A", asked "wrongq.example.test. IN A")`},
		{"wrongtype.example.test", checks.CauseProtocol, `answered another query (question "wrongtype.example.test. IN AAAA", asked "wrongtype.example.test. IN A")`},
		{"wrongclass.example.test", checks.CauseProtocol, `answered another query (question "wrongclass.example.test. CH A", asked`},
		{"twoq.example.test", checks.CauseProtocol, `answered another query (question "twoq.example.test. IN A" and 1 more, asked`},
		{"notify.example.test", checks.CauseProtocol, "the answer has opcode NOTIFY, not QUERY"},
		{"noq.example.test", checks.CauseProtocol, `the NOERROR answer has no question section (asked "noq.example.test. IN A")`},
		// A server that could not parse a query may leave the question
		// out of its error answer: the rcode is judged.
		{"noq-formerr.example.test", checks.CauseStatus, "dns rcode FORMERR for noq-formerr.example.test A, want NOERROR"},
		{"case.example.test", "", ""},
	} {
		for _, transport := range []string{"udp", "tcp"} {
			r := runRawDNS(t, s, checks.DNSSpec{QueryName: tc.name, Transport: transport}, 3*time.Second)
			if r.Cause != tc.cause || !strings.Contains(r.Err, tc.errHas) || r.OK != (tc.cause == "") {
				t.Errorf("%s over %s: ok=%v cause %q err %q\nwant cause %q and the error to contain %q", tc.name, transport, r.OK, r.Cause, r.Err, tc.cause, tc.errHas)
			}
			if tc.cause == checks.CauseProtocol && !strings.Contains(r.Err, "protocol: dns server "+s.addr+" over "+transport+": ") {
				t.Errorf("%s over %s: err %q: want it to name the server and transport", tc.name, transport, r.Err)
			}
		}
	}
}

// A reply that does not parse is an answer to wait for over TCP only
// when it is a truncated UDP answer to the query (TC and QR set, the
// query's ID); garbage with the TC bit set is protocol, over UDP and TCP.
func TestDNSUnparsableTruncatedReply(t *testing.T) {
	s := startRawDNS(t, true, func(q *dns.Msg, raw []byte, tcp bool) [][]byte {
		id := []byte{byte(q.Id >> 8), byte(q.Id)}
		// header: ID, flags, QDCOUNT 1, ANCOUNT 5, then junk.
		cut := func(flags0 byte) []byte {
			return append(append(id, flags0, 0x80, 0, 1, 0, 5, 0, 0, 0, 0), 9, 9, 9)
		}
		switch q.Question[0].Name {
		case "junk.example.test.": // the reviewer's 16 bytes: TC set, QR clear, another ID
			return [][]byte{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}
		case "tc-noqr.example.test.": // the query's ID, TC set, QR clear
			return [][]byte{cut(0x02)}
		case "tc-cut.example.test.": // a truncated answer cut mid-record, then junk over TCP too
			return [][]byte{cut(0x82)}
		case "tc-retry.example.test.": // cut over UDP, whole over TCP
			if tcp {
				return [][]byte{pack(answerA(q))}
			}
			return [][]byte{cut(0x82)}
		}
		return nil
	})
	for _, tc := range []struct {
		name, transport string
		ok              bool
		errHas          string
		tcpQueries      int64
	}{
		{"junk.example.test", "udp", false, "protocol: dns server " + s.addr + " over udp: answer does not parse", 0},
		{"junk.example.test", "tcp", false, "protocol: dns server " + s.addr + " over tcp answered another query (id mismatch)", 1},
		{"tc-noqr.example.test", "udp", false, "protocol: dns server " + s.addr + " over udp: answer does not parse", 0},
		{"tc-noqr.example.test", "tcp", false, "protocol: dns server " + s.addr + " over tcp: answer does not parse", 1},
		{"tc-cut.example.test", "udp", false, "protocol: the answer over udp was truncated; the retry over tcp (RFC 7766): dns server " + s.addr + " over tcp: answer does not parse", 1},
		{"tc-retry.example.test", "udp", true, "", 1},
	} {
		before := s.tcpQueries.Load()
		r := runRawDNS(t, s, checks.DNSSpec{QueryName: tc.name, Transport: tc.transport}, 3*time.Second)
		if r.OK != tc.ok || !tc.ok && r.Cause != checks.CauseProtocol || !strings.Contains(r.Err, tc.errHas) {
			t.Errorf("%s over %s: ok=%v cause %q err %q\nwant ok=%v, protocol and the error to contain %q", tc.name, tc.transport, r.OK, r.Cause, r.Err, tc.ok, tc.errHas)
		}
		if n := s.tcpQueries.Load() - before; n != tc.tcpQueries {
			t.Errorf("%s over %s: %d queries over tcp, want %d", tc.name, tc.transport, n, tc.tcpQueries)
		}
		if tc.ok && r.Proto != "DNS/TCP" {
			t.Errorf("%s: proto %q, want DNS/TCP", tc.name, r.Proto)
		}
	}
}

// A truncated UDP answer whose TCP retry is refused: the server answered,
// so the run fails with cause protocol and says both what came over UDP
// and what the retry got; ttfb is the UDP answer's arrival.
func TestDNSTruncatedRetryRefused(t *testing.T) {
	s := startRawDNS(t, false, func(q *dns.Msg, _ []byte, _ bool) [][]byte {
		m := answerA(q)
		m.Answer, m.Truncated = nil, true
		return [][]byte{pack(m)}
	})
	r := runRawDNS(t, s, checks.DNSSpec{QueryName: "big.example.test"}, 3*time.Second)
	want := "protocol: the answer over udp was truncated; the retry over tcp (RFC 7766): connection refused by " + s.addr
	if r.Cause != checks.CauseProtocol || !strings.HasPrefix(r.Err, want) {
		t.Errorf("cause %q err %q\nwant protocol and the error to start with %q", r.Cause, r.Err, want)
	}
	if r.Phases.TTFB <= 0 || r.Phases.TTFB > r.Phases.Total {
		t.Errorf("phases %+v: want ttfb, the truncated UDP answer's arrival, within total", r.Phases)
	}
}

// After a truncated UDP answer, ttfb stays the UDP answer's arrival: a
// slow TCP retry shows in duration, not ttfb.
func TestDNSTruncatedRetryTTFB(t *testing.T) {
	const tcpDelay = 400 * time.Millisecond
	s := startRawDNS(t, true, func(q *dns.Msg, _ []byte, tcp bool) [][]byte {
		m := answerA(q)
		if !tcp {
			m.Answer, m.Truncated = nil, true
		} else {
			time.Sleep(tcpDelay)
		}
		return [][]byte{pack(m)}
	})
	r := runRawDNS(t, s, checks.DNSSpec{QueryName: "big.example.test"}, 5*time.Second)
	if !r.OK || r.Proto != "DNS/TCP" {
		t.Fatalf("ok=%v proto %q cause %q err %q, want ok over DNS/TCP", r.OK, r.Proto, r.Cause, r.Err)
	}
	if r.Phases.TTFB <= 0 || r.Phases.Total < tcpDelay || r.Phases.Total-r.Phases.TTFB < tcpDelay-50*time.Millisecond {
		t.Errorf("phases %+v: want ttfb the UDP answer's arrival, at least %s before the end (the TCP retry's delay)", r.Phases, tcpDelay)
	}
}

// A reply with another ID: over UDP it is read past (a late answer to
// another query) and the timeout says it came; over TCP it fails at
// once as an answer to another query, even when it does not parse.
func TestDNSReplyWithAnotherID(t *testing.T) {
	s := startRawDNS(t, true, func(q *dns.Msg, _ []byte, tcp bool) [][]byte {
		other := answerA(q)
		other.Id ^= 0xffff
		switch q.Question[0].Name {
		case "wrongid.example.test.":
			return [][]byte{pack(other)}
		case "wrongid-junk.example.test.":
			return [][]byte{append([]byte{byte(^q.Id >> 8), byte(^q.Id)}, 0x81, 0x80, 0, 1, 0, 5, 0, 0, 0, 0, 9, 9)}
		case "late.example.test.": // another query's answer first, then this one's
			return [][]byte{pack(other), pack(answerA(q))}
		}
		return nil
	})
	start := time.Now()
	r := runRawDNS(t, s, checks.DNSSpec{QueryName: "wrongid.example.test"}, time.Second)
	want := "timeout: no answer from dns server " + s.addr + " over udp within 1s (1 reply with another ID came: answers to other queries, or a server that does not copy the query's ID)"
	if r.Cause != checks.CauseTimeout || r.Err != want {
		t.Errorf("udp: cause %q err %q\nwant timeout: %q", r.Cause, r.Err, want)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("the run took %s, want about its 1s timeout", took)
	}
	if r := runRawDNS(t, s, checks.DNSSpec{QueryName: "late.example.test"}, 3*time.Second); !r.OK {
		t.Errorf("udp, another ID then the answer: cause %q err %q, want ok", r.Cause, r.Err)
	}
	for _, name := range []string{"wrongid.example.test", "wrongid-junk.example.test"} {
		r := runRawDNS(t, s, checks.DNSSpec{QueryName: name, Transport: "tcp"}, 3*time.Second)
		want := "protocol: dns server " + s.addr + " over tcp answered another query (id mismatch)"
		if r.Cause != checks.CauseProtocol || r.Err != want {
			t.Errorf("%s over tcp: cause %q err %q\nwant protocol: %q", name, r.Cause, r.Err, want)
		}
	}
}

func TestDNSTargetAndTypeConfig(t *testing.T) {
	var spec checks.DNSSpec
	for _, u := range []string{"http://127.0.0.1:8080/", "https://[::1]/", "tcp://10.0.0.1:53"} {
		err := spec.TargetFits(u)
		if err == nil || !strings.Contains(err.Error(), "dns.query_name: required: the target's host ") || !strings.Contains(err.Error(), " is an IP address, not a name to resolve") {
			t.Errorf("TargetFits(%s) without query_name: %v, want a dns.query_name error", u, err)
		}
	}
	named := checks.DNSSpec{QueryName: "www.example.test"}
	if err := named.TargetFits("http://127.0.0.1:8080/"); err != nil {
		t.Errorf("TargetFits(an IP target) with query_name: %v", err)
	}
	if err := spec.TargetFits("https://www.example.test/"); err != nil {
		t.Errorf("TargetFits(a named target): %v", err)
	}
	err := named.TargetFits("dns://admin:s3cret@127.0.0.1:53")
	if err == nil || !strings.Contains(err.Error(), `a dns:// URL carries no user or password (a DNS query has none to send): remove the "user:…@"`) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("TargetFits(dns:// with userinfo): %v", err)
	}

	// At run time too: an IP target has no name to ask for.
	c, err := checks.NewDNS(checks.DNSSpec{Server: "127.0.0.1:1"}, checks.Expect{}, checks.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Run(context.Background(), checks.Target{Name: "web", URL: "http://127.0.0.1:8080/"})
	if r.OK || !strings.Contains(r.Err, "dns.query_name: required: the target's host 127.0.0.1 is an IP address") {
		t.Errorf("run against an IP target: cause %q err %q", r.Cause, r.Err)
	}

	for _, qt := range []string{"AXFR", "ixfr"} {
		_, err := checks.NewDNS(checks.DNSSpec{QueryName: "example.test", QueryType: qt}, checks.Expect{}, checks.Options{})
		if err == nil || !strings.Contains(err.Error(), `dns.query_type: "`+qt+`": zone transfers (AXFR, IXFR) are not supported`) {
			t.Errorf("query_type %s: %v", qt, err)
		}
	}
}
