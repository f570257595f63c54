package statuspage

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// BenchmarkIndex renders the overview of 40 checks × 10 targets × 5 regions
// (2000 cells) with a proxy section of 10 origins.
func BenchmarkIndex(b *testing.B) {
	src := &memSource{now: func() time.Time { return t0 }}
	for c := range 40 {
		for tg := range 10 {
			for r := range 5 {
				src.add(verdict(fmt.Sprintf("check-%02d", c), fmt.Sprintf("origin-%02d", tg), fmt.Sprintf("region-%d", r),
					reporting.StateHealthy, "", time.Duration(r)*time.Second))
			}
		}
	}
	o := sampleOptions(src, nil)
	o.Origins = func() []Origin {
		var out []Origin
		for i := range 10 {
			out = append(out, Origin{Pool: "web", Name: fmt.Sprintf("origin-%02d", i), Available: true,
				Flags: []Flag{{Source: FlagVerdict, Reason: "5/5 regions healthy"}}})
		}
		return out
	}
	p, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	h := p.Handler()
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
		b.SetBytes(int64(w.Body.Len()))
	}
}

// BenchmarkCheckPage renders /check/healthz of the sample data: an hour of
// history (2160 runs), 30 days of rollups, charts for three targets.
func BenchmarkCheckPage(b *testing.B) {
	p, err := New(sampleOptions(sampleSource(), nil))
	if err != nil {
		b.Fatal(err)
	}
	h := p.Handler()
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/check/healthz", nil))
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
		b.SetBytes(int64(w.Body.Len()))
	}
}
