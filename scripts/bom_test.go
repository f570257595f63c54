package scripts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// A JSON answer that starts with a UTF-8 byte-order mark is JSON to the
// json extractor and to last.json.
func TestJSONExtractWithBOM(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("\xef\xbb\xbf{\"token\":\"tok-bom\",\"n\":3}"))
	}))
	defer srv.Close()
	r := apiScript(t, `
- {http: {path: /login}, extract: {token: {json: token}}}
- {expr: 'vars.token == "tok-bom" && last.json.n == 3'}`)
	res := r.Run(context.Background(), checks.Target{Name: "o", URL: srv.URL})
	if !res.OK {
		t.Fatalf("run failed: cause %q: %s", res.Cause, res.Err)
	}
}
