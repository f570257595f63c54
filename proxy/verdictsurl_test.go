package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestHTTPSourceURLWithQuery: a verdicts URL carrying credentials in its
// query ("?access_token=T", as some gateways in front of a canary want) is
// requested at /api/v1/verdicts with that query and max_age added, and the
// token is shown nowhere: not in the source's name (logs, /healthz, the
// metrics label) nor in the error of a failed read.
func TestHTTPSourceURLWithQuery(t *testing.T) {
	const token = "QueryTok888"
	var gotPath, gotToken, gotMaxAge string
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotToken, gotMaxAge = r.URL.Path, r.URL.Query().Get("access_token"), r.URL.Query().Get("max_age")
		json.NewEncoder(w).Encode([]reporting.Verdict{})
	}))
	defer canary.Close()
	src := HTTPSource("http://vuser:VerdPw999@"+strings.TrimPrefix(canary.URL, "http://")+"/?access_token="+token, nil)
	if _, err := src.Verdicts(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if gotPath != "/api/v1/verdicts" || gotToken != token || gotMaxAge != "1m0s" {
		t.Errorf("the canary was asked path %q, access_token %q, max_age %q; want /api/v1/verdicts, %s, 1m0s", gotPath, gotToken, gotMaxAge, token)
	}
	name := src.(interface{ String() string }).String()
	if strings.Contains(name, token) || strings.Contains(name, "VerdPw999") || !strings.Contains(name, "/api/v1/verdicts") {
		t.Errorf("source name %q: want the verdicts URL without password or token", name)
	}
	canary.Close()
	_, err := src.Verdicts(context.Background(), time.Minute)
	if err == nil || strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "VerdPw999") {
		t.Errorf("read of a closed canary: %v; want an error without password or token", err)
	}
}
