package proxy

import (
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestClientCAChangeAppliesToOpenConnections: a reload that removes the CA
// a client certificate chains to, or turns client certificates on, applies
// to keep-alive connections made before it too (HTTP/1.1 and HTTP/2): their
// next request gets 403 and no X-Forwarded-Client-Cert reaches the origin.
// They were served, vouched for, as long as the client kept them open.
func TestClientCAChangeAppliesToOpenConnections(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		b := newBackend(t, "a")
		ca1, ca2 := newTestCA(t, "ca one"), newTestCA(t, "ca two")
		cfg := pool1(PolicyFirst, b.srv.URL)
		cfg.ClientCAFile = ca1.file
		h, _, addr, roots := runTLSProxyReg(t, cfg)
		good, _ := ca1.client(t, "alice")
		get := certGetter(t, addr, roots, &good, h2)
		if code := get(); code != 200 {
			t.Fatalf("h2=%v before the reload: %d", h2, code)
		}
		hits := b.hits.Load()
		next := h.p.state.Load().cfg
		next.ClientCAFile = ca2.file
		if err := h.p.Reload(next); err != nil {
			t.Fatal(err)
		}
		if code := get(); code != 403 {
			t.Errorf("h2=%v: a connection made with a certificate of the CA a reload removed: %d, want 403", h2, code)
		}
		if b.hits.Load() != hits {
			t.Errorf("h2=%v: the origin got the request", h2)
		}
	}

	// Client certificates turned on by a reload: a connection made without
	// one is not served anymore.
	b := newBackend(t, "a")
	ca := newTestCA(t, "ca")
	h, _, addr, roots := runTLSProxyReg(t, pool1(PolicyFirst, b.srv.URL))
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := client.Get("https://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	next := h.p.state.Load().cfg
	next.ClientCAFile = ca.file
	if err := h.p.Reload(next); err != nil {
		t.Fatal(err)
	}
	resp, err = client.Get("https://" + addr + "/")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("a connection made before client certificates were required: %d, want 403", resp.StatusCode)
		}
	}
}
