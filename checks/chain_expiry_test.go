package checks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestCertMinDaysChain: cert_min_days and the reported expiries look at the
// whole chain, not the leaf only. A leaf good for 90 days under an
// intermediate that expires in 5 fails cert_min_days 30, naming the
// intermediate; when the client also trusts a longer-lived copy of that
// intermediate the best verified chain lasts 90 days and passes, while
// the earliest presented expiry stays the intermediate's. With
// insecure_skip_verify the presented certificates are judged. The same
// holds for http and tls checks.
func TestCertMinDaysChain(t *testing.T) {
	now := time.Now()
	ch := checktest.NewChain(t, now.Add(90*24*time.Hour+time.Hour), now.Add(5*24*time.Hour+time.Hour))
	srv := ch.Serve(t)
	host := strings.TrimPrefix(srv.URL, "https://")
	rootOnly := checktest.PEMFile(t, ch.Root)
	crossSigned := checktest.PEMFile(t, ch.Root, ch.InterLong)

	type tc struct {
		name      string
		caFile    string
		insecure  bool
		ok        bool
		errHas    []string
		lastChain time.Time
	}
	cases := []tc{
		{name: "intermediate expires first", caFile: rootOnly,
			errHas:    []string{"certificate expires in 5 days (" + ch.Inter.NotAfter.UTC().Format(time.DateOnly) + "), want at least 30", "intermediate CN=vigil test intermediate"},
			lastChain: ch.Inter.NotAfter},
		{name: "a longer verified chain wins", caFile: crossSigned, ok: true, lastChain: ch.Leaf.NotAfter},
		{name: "insecure judges the presented certificates", insecure: true,
			errHas: []string{"certificate expires in 5 days", "intermediate CN=vigil test intermediate"}},
	}
	for _, kind := range []string{"http", "tls"} {
		for _, c := range cases {
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				expect := checks.Expect{CertMinDays: 30}
				var chk checks.Check
				var err error
				target := srv.URL
				if kind == "http" {
					chk, err = checks.NewHTTP(checks.HTTPSpec{TLS: checks.TLSOptions{CAFile: c.caFile, InsecureSkipVerify: c.insecure}},
						expect, checks.Options{Timeout: 5 * time.Second})
				} else {
					target = "tls://" + host
					chk, err = checks.NewTLS(checks.TLSSpec{CAFile: c.caFile, InsecureSkipVerify: c.insecure},
						expect, checks.Options{Timeout: 5 * time.Second})
				}
				if err != nil {
					t.Fatal(err)
				}
				r := chk.Run(context.Background(), checks.Target{URL: target})
				if r.OK != c.ok || (!c.ok && r.Cause != checks.CauseCert) {
					t.Fatalf("ok=%v cause %q err %q, want ok=%v (cause cert when not)", r.OK, r.Cause, r.Err, c.ok)
				}
				for _, s := range c.errHas {
					if !strings.Contains(r.Err, s) {
						t.Errorf("err %q, want it to contain %q", r.Err, s)
					}
				}
				if !r.CertExpiry.Equal(ch.Inter.NotAfter) {
					t.Errorf("CertExpiry %s, want the intermediate's %s (earliest presented), not the leaf's %s",
						r.CertExpiry, ch.Inter.NotAfter, ch.Leaf.NotAfter)
				}
				if !r.LastChainExpiry.Equal(c.lastChain) {
					t.Errorf("LastChainExpiry %s, want %s", r.LastChainExpiry, c.lastChain)
				}
			})
		}
	}
}

// TestCertExpiredWording: an expired certificate is said to have expired
// N days ago, not to expire in -N days.
func TestCertExpiredWording(t *testing.T) {
	now := time.Now()
	ch := checktest.NewChain(t, now.Add(-3*24*time.Hour-time.Hour), now.Add(365*24*time.Hour))
	srv := ch.Serve(t)
	for _, kind := range []string{"http", "tls"} {
		t.Run(kind, func(t *testing.T) {
			var chk checks.Check
			var err error
			target := srv.URL
			if kind == "http" {
				chk, err = checks.NewHTTP(checks.HTTPSpec{TLS: checks.TLSOptions{InsecureSkipVerify: true}},
					checks.Expect{CertMinDays: 7}, checks.Options{Timeout: 5 * time.Second})
			} else {
				target = "tls://" + strings.TrimPrefix(srv.URL, "https://")
				chk, err = checks.NewTLS(checks.TLSSpec{InsecureSkipVerify: true}, checks.Expect{CertMinDays: 7}, checks.Options{Timeout: 5 * time.Second})
			}
			if err != nil {
				t.Fatal(err)
			}
			r := chk.Run(context.Background(), checks.Target{URL: target})
			want := "certificate expired 3 days ago (" + ch.Leaf.NotAfter.UTC().Format(time.DateOnly) + "), want at least 7: leaf CN=vigil test leaf"
			if r.Cause != checks.CauseCert || r.Err != want {
				t.Errorf("cause %q err %q, want cert %q", r.Cause, r.Err, want)
			}
			for _, a := range r.Assertions {
				if a.Name == "cert_min_days" && a.Got != "expired 3 days ago (leaf CN=vigil test leaf)" {
					t.Errorf("cert_min_days got %q, want %q", a.Got, "expired 3 days ago (leaf CN=vigil test leaf)")
				}
			}
		})
	}
}
