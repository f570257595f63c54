package alerting

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/statuspage"
)

// emptyHistory is a store with nothing in it.
type emptyHistory struct{}

func (emptyHistory) Verdicts(context.Context, time.Duration) ([]reporting.Verdict, error) {
	return nil, nil
}
func (emptyHistory) History(context.Context, reporting.HistoryQuery) ([]reporting.Verdict, error) {
	return nil, nil
}
func (emptyHistory) Rollups(context.Context, reporting.HistoryQuery) ([]reporting.Rollup, error) {
	return nil, nil
}

// TestArtifactLinkFetches: the artifact_url a notification carries, for a
// current reference (a file name under <data_dir>/artifacts) and for the
// paths older versions stored, fetches the screenshot from a real status
// page serving <data_dir>/artifacts: 200 image/png.
func TestArtifactLinkFetches(t *testing.T) {
	data := t.TempDir()
	arts := filepath.Join(data, "artifacts")
	png := []byte("\x89PNG\r\n\x1a\nfake")
	if err := os.MkdirAll(arts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(arts, "shop-eu 1.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := statuspage.New(statuspage.Options{Verdicts: emptyHistory{}, ArtifactsDir: arts,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	l := newLinker(Config{StatusPageURL: srv.URL + "/"})
	for _, ref := range []string{"shop-eu 1.png", filepath.Join(arts, "shop-eu 1.png"), "vigil-data/artifacts/shop-eu 1.png", "artifacts/shop-eu 1.png"} {
		link := l.artifact(ref)
		if link != srv.URL+"/artifacts/shop-eu%201.png" {
			t.Errorf("artifact(%q) = %q, want %s/artifacts/shop-eu%%201.png", ref, link, srv.URL)
			continue
		}
		resp, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || string(b) != string(png) {
			t.Errorf("GET %s = %d %q, want 200 image/png", link, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	if got := l.artifact("/etc/shots/x.png"); got != "" {
		t.Errorf("an absolute path outside any artifacts dir linked as %q, want no link", got)
	}
	if got := (linker{}).artifact("x.png"); got != "" {
		t.Errorf("without status_page_url: %q, want no link", got)
	}
}
