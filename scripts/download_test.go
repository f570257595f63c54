package scripts

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestBrowserNavigateToDownload: navigate to a URL whose server answers
// with a download fails as a script failure that says so (status, type,
// Content-Disposition), not as a connection failure (net::ERR_ABORTED,
// cause connect): the origin answered.
func TestBrowserNavigateToDownload(t *testing.T) {
	b := needChromium(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/file.csv", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv")
		w.Header().Set("Content-Disposition", `attachment; filename="file.csv"`)
		io.WriteString(w, "a,b\n1,2\n")
	})
	o := serveOn(t, mux)
	res := browserRunner(t, b, "", `[{browser: {navigate: /file.csv}, timeout: 5s}]`, 20*time.Second).
		Run(context.Background(), checks.Target{Name: "app", URL: o.URL})
	want := `step 0 (browser.navigate): navigate ` + o.URL + `/file.csv: the server answered 200 with a download (text/csv, Content-Disposition: attachment; filename="file.csv"), not a page`
	if got, _, _ := strings.Cut(res.Err, "; no failure screenshot"); res.OK || res.Cause != checks.CauseScript || !strings.HasPrefix(got, want) {
		t.Errorf("got %s: %q\nwant script: %q…", res.Cause, res.Err, want)
	}
	if res.StatusCode != 200 || res.Steps[0].StatusCode != 200 {
		t.Errorf("status %d, step %d, want 200", res.StatusCode, res.Steps[0].StatusCode)
	}
}
