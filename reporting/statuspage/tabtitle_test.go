package statuspage

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/store"
)

// The browser tab's title adds " status" to the configured title unless
// the title already says it: "Acme status" is not "Acme status status".
func TestTabTitle(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return t0 }, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tc := range []struct{ title, want string }{
		{"Acme status", "<title>Acme status</title>"},
		{"Acme Status", "<title>Acme Status</title>"},
		{"Acme", "<title>Acme status</title>"},
	} {
		p, err := New(Options{Verdicts: st, Title: tc.title, Now: func() time.Time { return t0 }, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		pub := httptest.NewServer(p.PublicHandler(func() PublicConfig { return PublicConfig{Title: tc.title} }))
		op := httptest.NewServer(p.Handler())
		for _, srv := range []*httptest.Server{pub, op} {
			code, _, body := get(t, srv, "/")
			if code != 200 {
				t.Fatalf("GET /: %d", code)
			}
			if !strings.Contains(body, tc.want) {
				i := strings.Index(body, "<title>")
				t.Errorf("title %q: want %s, page has %.60s", tc.title, tc.want, body[max(i, 0):])
			}
		}
		pub.Close()
		op.Close()
	}
}
