package proxy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shortClientTLSPoll makes proxies built during the test look at
// client_ca_file and client_crl_file every 50ms.
func shortClientTLSPoll(t *testing.T) {
	old := clientTLSPollEvery
	clientTLSPollEvery = 50 * time.Millisecond
	t.Cleanup(func() { clientTLSPollEvery = old })
}

// TestClientCRLRewrittenInPlace: a client_crl_file the CA's cron rewrites
// in place, with no reload, is taken within the poll period: a new
// handshake with the certificate it now revokes fails, a connection kept
// open with it gets 403 on its next request and reaches no origin, the
// certificate it no longer lists is served, the next-update metric follows
// and an INFO line says the new CRL was taken.
func TestClientCRLRewrittenInPlace(t *testing.T) {
	shortClientTLSPoll(t)
	b := newBackend(t, "a")
	ca := newCRLCA(t, "vigil client CA")
	alice, aliceLeaf := ca.client(t, "alice")
	bob, bobLeaf := ca.client(t, "bob")
	crl := filepath.Join(t.TempDir(), "clients.crl")
	soon := time.Now().Add(time.Hour).Truncate(time.Second)
	writeCRLs(t, crl, crlDER(t, ca, soon, bobLeaf))
	cfg := pool1(PolicyFirst, b.srv.URL)
	cfg.ClientCAFile, cfg.ClientCRLFile = ca.file, crl
	h, addr, roots, logs := runCRLProxy(t, cfg)

	kept := certGetter(t, addr, roots, &alice, false)
	if code := kept(); code != 200 {
		t.Fatalf("alice before the rewrite: %d", code)
	}
	if _, _, err := tlsGet(t, addr, roots, &bob, false, "/"); err == nil {
		t.Fatal("bob, revoked, was served before the rewrite")
	}

	later := time.Now().Add(48 * time.Hour).Truncate(time.Second)
	writeCRLs(t, crl, crlDER(t, ca, later, aliceLeaf)) // in place: same path, no rename, no reload
	eventually(t, "a new handshake with alice refused after the CRL was rewritten", func() bool {
		_, _, err := tlsGet(t, addr, roots, &alice, false, "/")
		return err != nil
	})
	hits := b.hits.Load()
	if code := kept(); code != 403 {
		t.Errorf("a connection kept open with a certificate the rewritten CRL revokes: %d, want 403", code)
	}
	if b.hits.Load() != hits {
		t.Error("the origin got the revoked connection's request")
	}
	if code, _, err := tlsGet(t, addr, roots, &bob, false, "/"); err != nil || code != 200 {
		t.Errorf("bob, no longer revoked: %d %v", code, err)
	}
	const name = "vigil_proxy_client_crl_next_update_timestamp_seconds"
	if v, ok := h.metric(name, map[string]string{"file": crl}); !ok || v != float64(later.Unix()) {
		t.Errorf("%s = %v (present %v), want the rewritten CRL's next update %d", name, v, ok, later.Unix())
	}
	if lines := logs.lines("level=INFO", "client_crl_file rewritten", crl); len(lines) != 1 {
		t.Errorf("want one INFO line saying the rewritten CRL was taken, got %q", logs.String())
	}
	if err := h.p.ClientTLSHealth(); err != nil {
		t.Errorf("health after a good rewrite: %v", err)
	}

	// Touched without a change: nothing is taken again.
	now := time.Now()
	os.Chtimes(crl, now, now)
	time.Sleep(5 * clientTLSPollEvery)
	if lines := logs.lines("client_crl_file rewritten"); len(lines) != 1 {
		t.Errorf("a touched, unchanged CRL was taken again: %q", lines)
	}
}

// TestClientCRLRewrittenBroken: a client_crl_file rewritten in place into
// something that does not load (not a CRL; a CRL another CA signed) keeps
// the CRL in force, logs one ERROR naming the key and the file per change
// and shows in ClientTLSHealth (/healthz) until the file loads again.
func TestClientCRLRewrittenBroken(t *testing.T) {
	shortClientTLSPoll(t)
	b := newBackend(t, "a")
	ca := newCRLCA(t, "vigil client CA")
	stranger := newCRLCA(t, "someone else")
	alice, _ := ca.client(t, "alice")
	bob, bobLeaf := ca.client(t, "bob")
	crl := filepath.Join(t.TempDir(), "clients.crl")
	writeCRLs(t, crl, crlDER(t, ca, time.Now().Add(time.Hour), bobLeaf))
	cfg := pool1(PolicyFirst, b.srv.URL)
	cfg.ClientCAFile, cfg.ClientCRLFile = ca.file, crl
	h, addr, roots, logs := runCRLProxy(t, cfg)

	for _, c := range []struct {
		name, want string
		write      func()
	}{
		{"garbage", "not a PEM or DER CRL", func() { os.WriteFile(crl, []byte("half a CRL"), 0o600) }},
		{"another CA's CRL", "not issued by a CA of client_ca_file", func() { writeCRLs(t, crl, crlDER(t, stranger, time.Now().Add(time.Hour))) }},
	} {
		c.write()
		eventually(t, c.name+": ERROR logged", func() bool {
			return len(logs.lines("level=ERROR", "client_crl_file changed on disk but does not load", "file="+crl, c.want)) > 0
		})
		err := h.p.ClientTLSHealth()
		if err == nil || !strings.Contains(err.Error(), "client_crl_file") || !strings.Contains(err.Error(), crl) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: health %v, want the key, the file and %q", c.name, err, c.want)
		}
		time.Sleep(5 * clientTLSPollEvery)
		if lines := logs.lines("level=ERROR", c.want); len(lines) != 1 {
			t.Errorf("%s: want one ERROR line for one change, got %d: %q", c.name, len(lines), lines)
		}
		// The CRL in force still applies.
		if _, _, err := tlsGet(t, addr, roots, &bob, false, "/"); err == nil {
			t.Errorf("%s: bob, revoked by the CRL in force, was served", c.name)
		}
		if code, _, err := tlsGet(t, addr, roots, &alice, false, "/"); err != nil || code != 200 {
			t.Errorf("%s: alice: %d %v", c.name, code, err)
		}
	}

	writeCRLs(t, crl, crlDER(t, ca, time.Now().Add(time.Hour)))
	eventually(t, "health clear once the file loads", func() bool { return h.p.ClientTLSHealth() == nil })
	eventually(t, "bob served once the fixed CRL no longer lists him", func() bool {
		code, _, err := tlsGet(t, addr, roots, &bob, false, "/")
		return err == nil && code == 200
	})
}

// TestClientCAFileRewrittenInPlace: a client_ca_file rewritten in place
// to another CA is taken without a reload: a certificate of the old CA is
// refused, one of the new CA served.
func TestClientCAFileRewrittenInPlace(t *testing.T) {
	shortClientTLSPoll(t)
	b := newBackend(t, "a")
	oldCA := newTestCA(t, "old client CA")
	newCA := newTestCA(t, "new client CA")
	alice, _ := oldCA.client(t, "alice")
	carol, _ := newCA.client(t, "carol")
	caFile := filepath.Join(t.TempDir(), "clients-ca.pem")
	joinFiles(t, caFile, oldCA.file)
	cfg := pool1(PolicyFirst, b.srv.URL)
	cfg.ClientCAFile = caFile
	_, addr, roots, logs := runCRLProxy(t, cfg)
	if code, _, err := tlsGet(t, addr, roots, &alice, false, "/"); err != nil || code != 200 {
		t.Fatalf("alice before the rewrite: %d %v", code, err)
	}
	joinFiles(t, caFile, newCA.file)
	eventually(t, "carol served after client_ca_file was rewritten", func() bool {
		code, _, err := tlsGet(t, addr, roots, &carol, false, "/")
		return err == nil && code == 200
	})
	if _, _, err := tlsGet(t, addr, roots, &alice, false, "/"); err == nil {
		t.Error("alice, of the CA taken out of client_ca_file, was served")
	}
	if lines := logs.lines("level=INFO", "client_ca_file rewritten", caFile); len(lines) != 1 {
		t.Errorf("want one INFO line saying the new client_ca_file was taken, got %q", logs.String())
	}
}
