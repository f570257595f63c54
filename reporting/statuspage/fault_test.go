package statuspage

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestFaultBackRedirect posts the fault form with hostile and ordinary back
// values and checks the Location the browser is sent to.
func TestFaultBackRedirect(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	srv := serve(t, Options{Verdicts: src, Faults: &FaultControl{Origins: []string{"origin-a"}, Open: true,
		Set: func(o, m string) error { return nil }, Current: func(string) string { return "ok" }}})
	cl := srv.Client()
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, c := range []struct{ back, location string }{
		{"//evil.example/x", "/"},
		{"/\\evil.example/x", "/"},
		{"/\t/evil.example/x", "/"},
		{"/\n/evil.example/x", "/"},
		{"/\r/evil.example/x", "/"},
		{"/ /evil.example/x", "/"},
		{"/\x00/evil.example/x", "/"},
		{"/\u00a0/evil.example/x", "/"},
		{"/check/a\\b", "/"},
		{"\t//evil.example/x", "/"},
		{"https://evil.example/x", "/"},
		{"evil.example/x", "/"},
		{"/\xff", "/"},
		{"", "/"},
		{"/%09/evil.example/x", "/%09/evil.example/x"},
		{"/check/asset?window=1h", "/check/asset?window=1h"},
		{"/", "/"},
	} {
		resp, err := cl.PostForm(srv.URL+"/fault", url.Values{"origin": {"origin-a"}, "mode": {"ok"}, "back": {c.back}})
		if err != nil { // the client refuses a Location with control characters
			t.Errorf("back=%q: %v", c.back, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("back=%q: status %d, want 303", c.back, resp.StatusCode)
			continue
		}
		if loc := resp.Header.Get("Location"); loc != c.location {
			t.Errorf("back=%q: Location %q, want %q", c.back, loc, c.location)
		}
	}
}
