package statuspage

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestDuplicateCanariesBanner: two canaries writing the embedded store
// with the same region and vantage (their runs interleave) put a banner on
// the overview and the check page naming the region and vantage and the
// advice; two regions put none.
func TestDuplicateCanariesBanner(t *testing.T) {
	for _, tc := range []struct {
		name    string
		regionB string
		want    bool
	}{
		{"same region and vantage", "eu", true},
		{"two regions", "us", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return t0 },
				Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Duplicates: reporting.NewDuplicateWatch(slog.New(slog.NewTextHandler(io.Discard, nil)))})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var vs []reporting.Verdict
			for i := range 6 {
				v := verdict("home", "origin-a", "eu", reporting.StateHealthy, "", time.Duration(60-i*10)*time.Second)
				v.Vantage, v.Instance = "eu-1", "host-a-1111"
				if i%2 == 1 {
					v.Region, v.Instance = tc.regionB, "host-b-2222"
				}
				vs = append(vs, v)
			}
			if err := st.Publish(context.Background(), vs); err != nil {
				t.Fatal(err)
			}
			srv := serve(t, Options{Verdicts: st})
			for _, path := range []string{"/", "/check/home"} {
				code, _, body := get(t, srv, path)
				if code != http.StatusOK {
					t.Fatalf("GET %s = %d\n%s", path, code, body)
				}
				n := byID(parseHTML(t, body), "notice")
				if n == nil {
					t.Fatalf("GET %s: no #notice", path)
				}
				_, hidden := attr(n, "hidden")
				line := strings.TrimSpace(text(n))
				if !tc.want {
					if !hidden || line != "" {
						t.Errorf("GET %s: banner %q (hidden %v), want none", path, line, hidden)
					}
					continue
				}
				want := "Several canaries write the same verdicts in region eu, vantage eu-1 (2 instances): their verdicts overwrite each other. Give each canary its own agent.vantage or agent.region."
				if hidden || line != want {
					t.Errorf("GET %s: banner %q (hidden %v), want %q", path, line, hidden, want)
				}
			}
		})
	}
}
