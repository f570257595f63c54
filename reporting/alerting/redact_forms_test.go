package alerting

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// rawurlencode percent-encodes every byte of s but A-Za-z0-9-._~ (PHP's
// rawurlencode, Python's quote(s, safe="")).
func rawurlencode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// A receiver that answers 500 echoing its X-Key header RFC 3986-encoded
// and HTML-escaped: the delivery failure (status page, /healthz, log)
// shows both as ***.
func TestDeliveryErrorsHideEncodedHeaderSecret(t *testing.T) {
	const key = "Sp&c'al 1xabcdef"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		v := r.Header.Get("X-Key")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "bad key %s | %s end", rawurlencode(v), html.EscapeString(v))
	}))
	t.Cleanup(srv.Close)
	r := newDeliveryRig(t, []Receiver{
		{Name: "rq", Webhook: &WebhookConfig{URL: Secret(srv.URL + "/hook"), Headers: map[string]Secret{"x-key": key}}},
	}, Options{})
	r.fire(t)
	got := r.a.DeliveryFailures()["rq"]
	if want := "status 500: bad key *** | *** end"; !strings.HasSuffix(got, want) {
		t.Errorf("DeliveryFailures[rq] = %q, want it to end %q", got, want)
	}
	if logs := r.logText(); strings.Contains(logs, "Sp%26c") || strings.Contains(logs, "Sp&amp;c") {
		t.Errorf("log shows the encoded key:\n%s", logs)
	}
}
