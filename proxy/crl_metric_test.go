package proxy

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestClientCRLNextUpdateMetric: vigil_proxy_client_crl_next_update_timestamp_seconds
// gives client_crl_file's earliest next update, follows a reload that loads
// a newer CRL, and is absent once client_crl_file is removed: what an alert
// on a CRL about to go stale reads.
func TestClientCRLNextUpdateMetric(t *testing.T) {
	b := newBackend(t, "a")
	ca := newCRLCA(t, "vigil client CA")
	other := newCRLCA(t, "vigil client CA 2")
	_, leaf := ca.client(t, "bob")
	crl := filepath.Join(t.TempDir(), "clients.crl")
	soon := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	later := time.Now().Add(48 * time.Hour).Truncate(time.Second)
	writeCRLs(t, crl, crlDER(t, ca, later, leaf), crlDER(t, other, soon))
	both := filepath.Join(t.TempDir(), "cas.pem")
	joinFiles(t, both, ca.file, other.file)
	cfg := pool1(PolicyFirst, b.srv.URL)
	cfg.ClientCAFile, cfg.ClientCRLFile = both, crl
	h, _, _, _ := runCRLProxy(t, cfg)

	const name = "vigil_proxy_client_crl_next_update_timestamp_seconds"
	labels := map[string]string{"file": crl}
	if v, ok := h.metric(name, labels); !ok || v != float64(soon.Unix()) {
		t.Fatalf("%s = %v (present %v), want the earliest next update %d", name, v, ok, soon.Unix())
	}

	newer := time.Now().Add(72 * time.Hour).Truncate(time.Second)
	writeCRLs(t, crl, crlDER(t, ca, later, leaf), crlDER(t, other, newer))
	if err := h.p.Reload(h.p.state.Load().cfg); err != nil {
		t.Fatal(err)
	}
	if v, ok := h.metric(name, labels); !ok || v != float64(later.Unix()) {
		t.Fatalf("after a reload with a newer CRL: %s = %v (present %v), want %d", name, v, ok, later.Unix())
	}

	cfg = h.p.state.Load().cfg
	cfg.ClientCRLFile = ""
	if err := h.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if v, ok := h.metric(name, labels); ok {
		t.Fatalf("without client_crl_file: %s = %v, want absent", name, v)
	}
}

// joinFiles writes the contents of files, one after another, to path.
func joinFiles(t *testing.T, path string, files ...string) {
	t.Helper()
	var b []byte
	for _, f := range files {
		c, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, c...)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
