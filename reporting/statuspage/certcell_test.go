package statuspage

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// A cell whose last run saw a certificate expiring within 30 days shows it,
// on the overview and the check page a cert_expiry alert links to; one far
// from expiry does not. Was: the check page of a certificate 4 days from
// expiry showed only "✓ healthy".
func TestCellShowsCertificateExpiry(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	v := func(target string, left time.Duration) reporting.Verdict {
		return reporting.Verdict{Check: "cert", Target: target, Region: "eu", State: reporting.StateHealthy, OK: true,
			At: t0.Add(-5 * time.Second), Expires: t0.Add(time.Minute), Interval: 15 * time.Second, CertExpiry: t0.Add(left)}
	}
	src.add(v("secure", 4*24*time.Hour+time.Hour), v("fine", 80*24*time.Hour))
	srv := serve(t, Options{Verdicts: src})
	for _, path := range []string{"/", "/check/cert", "/check/cert?target=secure"} {
		code, _, body := get(t, srv, path)
		if code != 200 {
			t.Fatalf("GET %s: %d", path, code)
		}
		if !strings.Contains(body, "certificate expires in 4 days") || !strings.Contains(body, "certificate not after 2026-12-04 13:00:00 UTC") {
			t.Errorf("GET %s: no expiry shown for the certificate 4 days from it", path)
		}
		if strings.Contains(body, "expires in 80 days") {
			t.Errorf("GET %s: shows a certificate 80 days from expiry", path)
		}
	}
}

func TestFmtCertLeft(t *testing.T) {
	for d, want := range map[time.Duration]string{
		4*24*time.Hour + time.Hour: "expires in 4 days",
		5 * time.Hour:              "expires in 5 hours",
		20 * time.Minute:           "expires in 20 min",
		-2 * 24 * time.Hour:        "expired 2 days ago",
	} {
		if got := fmtCertLeft(d); got != want {
			t.Errorf("fmtCertLeft(%v) = %q, want %q", d, got, want)
		}
	}
}
