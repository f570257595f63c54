package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDemoFaultUsageExitCodes: every usage error of `vigil demo fault`
// (unknown origin, unknown mode, bad parameter) exits 2 like a missing
// MODE, and says what is accepted; a bad --origin-port names the flag.
func TestDemoFaultUsageExitCodes(t *testing.T) {
	origins, err := startDemoOrigins("127.0.0.1", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, o := range origins {
			o.Close()
		}
	}()
	d := &demo{origins: origins}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /demo/fault", d.faultAPI)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown mode", []string{"origin-b", "bogus"}, "vigil demo fault: "},
		{"unknown origin", []string{"origin-z", "ok"}, `vigil demo fault: no origin "origin-z" (have origin-a, origin-b, origin-c)`},
		{"bad parameter", []string{"origin-a", "slow:abc"}, "vigil demo fault: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, code := runCLI(t, append([]string{"demo", "fault", "--addr", addr}, c.args...)...)
			if code != 2 || !strings.Contains(out, c.want) || !strings.Contains(out, "\nmodes: ok, down,") {
				t.Errorf("exit %d, output %q; want exit 2, %q and the modes", code, out, c.want)
			}
		})
	}
	if out, code := runCLI(t, "demo", "fault", "--addr", addr, "origin-a", "corrupt"); code != 0 || out != "origin-a is now corrupt\n" {
		t.Errorf("good switch: exit %d, output %q", code, out)
	}

	for _, cmd := range [][]string{{"demo", "--origin-port", "70000"}, {"demo", "origins", "--origin-port", "70000"}} {
		out, code := runCLI(t, cmd...)
		if want := "--origin-port: 70000: want 1-65532, or 0 for any free ports"; code != 2 || !strings.Contains(out, want) {
			t.Errorf("%s: exit %d, output %q; want exit 2 and %q", strings.Join(cmd, " "), code, out, want)
		}
	}
}

// TestCheckJUnitUnwritable: an unwritable --junit path is a usage error
// before any check runs: the origin sees no request.
func TestCheckJUnitUnwritable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hits := make(chan struct{}, 16)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case hits <- struct{}{}:
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	cfg := writeConfig(t, `checks: [{name: h, url: "http://`+ln.Addr().String()+`", http: {}}]`+"\n")
	out, code := runCLI(t, "check", "-c", cfg, "--junit", "/nonexistent/dir/r.xml")
	if want := "--junit: open /nonexistent/dir/r.xml: directory /nonexistent/dir does not exist"; code != 2 || !strings.Contains(out, want) {
		t.Errorf("exit %d, output %q; want exit 2 and %q", code, out, want)
	}
	if len(hits) != 0 || strings.Contains(out, "PASS") {
		t.Errorf("the check ran before the usage error (%d requests, output %q)", len(hits), out)
	}
}
