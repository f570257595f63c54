package checks_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// listenBoth listens on 127.0.0.1 and [::1] on the same port; the server
// answers with the family the client came over ("4" or "6"). Without an
// IPv6 loopback it fails under CI=true and skips otherwise.
func listenBoth(t *testing.T) string {
	t.Helper()
	ln4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln4.Addr().String())
	ln6, err := net.Listen("tcp6", "[::1]:"+port)
	if err != nil {
		ln4.Close()
		if os.Getenv("CI") == "true" {
			t.Fatalf("no IPv6 loopback (::1) to test ip_protocol with: %v", err)
		}
		t.Skipf("SKIPPED: no IPv6 loopback (::1) to test ip_protocol with: %v", err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		if strings.Contains(host, ":") {
			w.Write([]byte("family 6"))
		} else {
			w.Write([]byte("family 4"))
		}
	})
	for _, ln := range []net.Listener{ln4, ln6} {
		srv := &http.Server{Handler: h}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
	}
	return port
}

// TestIPProtocol: ip_protocol dials only its family — an IP literal of the
// other family fails with cause connect (a name without such an address
// with cause dns) — and ip_protocol_fallback dials the other family then.
// tcp checks follow the same keys.
func TestIPProtocol(t *testing.T) {
	port := listenBoth(t)
	v4, v6 := "http://127.0.0.1:"+port+"/", "http://[::1]:"+port+"/"
	type ipCase struct {
		name, url, proto string
		fallback         bool
		family           string // the family the server saw; "" = failed
		cause            checks.Cause
		err              string
	}
	cases := []ipCase{
		{"v4 literal, ip4", v4, "ip4", false, "4", "", ""},
		{"v6 literal, ip6", v6, "ip6", false, "6", "", ""},
		{"v4 literal, ip6", v4, "ip6", false, "", checks.CauseConnect, "connect: 127.0.0.1 is not an IPv6 address (ip_protocol: ip6)"},
		{"v6 literal, ip4", v6, "IP4", false, "", checks.CauseConnect, "connect: ::1 is not an IPv4 address (ip_protocol: ip4)"},
		{"v4 literal, ip6 with fallback", v4, "ip6", true, "4", "", ""},
		{"v6 literal, ip4 with fallback", v6, "ip4", true, "6", "", ""},
	}
	// localhost: whatever the hosts file gives it.
	addrs, _ := net.DefaultResolver.LookupIPAddr(context.Background(), "localhost")
	has := map[string]bool{}
	for _, a := range addrs {
		if a.IP.To4() != nil {
			has["4"] = true
		} else {
			has["6"] = true
		}
	}
	local := "http://localhost:" + port + "/"
	for _, f := range []string{"4", "6"} {
		if has[f] {
			cases = append(cases, ipCase{"localhost, ip" + f, local, "ip" + f, false, f, "", ""})
		} else {
			cases = append(cases, ipCase{"localhost, ip" + f, local, "ip" + f, false, "", checks.CauseDNS, "dns: lookup localhost: no IPv" + f + " address (ip_protocol: ip" + f + ")"})
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := checks.NewHTTP(checks.HTTPSpec{URL: tc.url, IPProtocol: tc.proto, IPProtocolFallback: tc.fallback},
				checks.Expect{Body: checks.BodyExpect{Contains: []string{"family " + tc.family}}}, checks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			r := h.Run(context.Background(), checks.Target{})
			if tc.family != "" && !r.OK {
				t.Fatalf("%s %s; assertions %+v", r.Cause, r.Err, r.Assertions)
			}
			if tc.family == "" && (r.Cause != tc.cause || r.Err != tc.err) {
				t.Errorf("cause %q err %q, want %q %q", r.Cause, r.Err, tc.cause, tc.err)
			}

			c, err := checks.NewTCP(checks.TCPSpec{IPProtocol: tc.proto, IPProtocolFallback: tc.fallback}, checks.Expect{}, checks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r = c.Run(context.Background(), checks.Target{URL: strings.Replace(strings.TrimSuffix(tc.url, "/"), "http://", "tcp://", 1)})
			if r.OK != (tc.family != "") || r.Cause != tc.cause || r.Err != tc.err {
				t.Errorf("tcp: ok %v cause %q err %q, want %q %q", r.OK, r.Cause, r.Err, tc.cause, tc.err)
			}
		})
	}
}

// TestIPProtocolConfig: bad values name the key.
func TestIPProtocolConfig(t *testing.T) {
	for _, tc := range []struct {
		proto    string
		fallback bool
		want     string
	}{
		{"ipv6", false, `http.ip_protocol: "ipv6": want "ip4" or "ip6" (write "ip6")`},
		{"both", false, `http.ip_protocol: "both": want "ip4" or "ip6"`},
		{"", true, `http.ip_protocol_fallback: needs ip_protocol`},
	} {
		_, err := checks.NewHTTP(checks.HTTPSpec{URL: "http://example.com/", IPProtocol: tc.proto, IPProtocolFallback: tc.fallback}, checks.Expect{}, checks.Options{})
		if !errors.Is(err, checks.ErrBadValue) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q/%v: err %v, want %q", tc.proto, tc.fallback, err, tc.want)
		}
	}
	_, err := checks.NewTLS(checks.TLSSpec{IPProtocol: "4"}, checks.Expect{}, checks.Options{})
	if err == nil || !strings.Contains(err.Error(), `tls.ip_protocol: "4": want "ip4" or "ip6" (write "ip4")`) {
		t.Errorf("tls: %v", err)
	}
}
