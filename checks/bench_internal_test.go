package checks

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// BenchmarkHTTPCheckFreshTransport is the alternative to the default
// (one shared Transport with DisableKeepAlives): a new Transport per run.
// It documents why the default was chosen.
func BenchmarkHTTPCheckFreshTransport(b *testing.B) {
	o := checktest.NewOrigin()
	defer o.Close()
	h, err := NewHTTP(HTTPSpec{Path: "/healthz"}, Expect{Status: StatusList{"200"}}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	t := Target{URL: o.URL()}
	b.ReportAllocs()
	for b.Loop() {
		d := &dialer{Dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: -1}}
		h.tr = &http.Transport{DialContext: d.DialContext, TLSClientConfig: h.spec.TLS.config(""), DisableCompression: true}
		if r := h.Run(context.Background(), t); !r.OK {
			b.Fatalf("%s %s", r.Cause, r.Err)
		}
		h.tr.CloseIdleConnections()
	}
}
