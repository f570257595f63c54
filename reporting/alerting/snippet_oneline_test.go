package alerting

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A receiver's answer to a failed delivery is quoted on one line: its
// newlines, CRs, tabs, other control characters and Unicode line and
// paragraph separators cannot add lines to the error /healthz shows.
func TestFailedDeliverySnippetIsOneLine(t *testing.T) {
	body := "<script>alert(1)</script>\r\nPOST /fail/pd HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nok\nwarning: fake\tline\u2028ok\u2029x\u0085y\x00z\x7f!\v\f"
	long := strings.Repeat("ab\n", 200) // cut at snippetMax, on one line too
	for _, tc := range []struct{ body, want string }{
		{body, "status 500: <script>alert(1)</script> POST /fail/pd HTTP/1.1 Host: 127.0.0.1 ok warning: fake line ok x y z !"},
		{long, "status 500: " + strings.TrimSpace(strings.Repeat("ab ", snippetMax/3)) + " a…"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(tc.body))
		}))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := post(ctx, srv.Client(), newEndpoint(srv.URL+"/fail/pd", false, nil), []byte(`{}`))
		cancel()
		srv.Close()
		if err == nil {
			t.Fatal("a 500 answer was not an error")
		}
		msg := err.Error()
		if strings.ContainsFunc(msg, func(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f || r == '\u2028' || r == '\u2029' }) {
			t.Errorf("error has control characters or line separators: %q", msg)
		}
		if !strings.HasSuffix(msg, tc.want) {
			t.Errorf("error = %q, want it to end with %q", msg, tc.want)
		}
	}
}
