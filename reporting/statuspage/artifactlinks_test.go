package statuspage

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// hrefs returns the href of every <a> in body whose text starts with marker.
func hrefs(t *testing.T, body, marker string) []string {
	t.Helper()
	var out []string
	for _, part := range strings.Split(body, "<a ")[1:] {
		tag := part[:strings.Index(part, ">")]
		if marker != "" && !strings.Contains(part, marker) {
			continue
		}
		if i := strings.Index(tag, `href="`); i >= 0 {
			h := tag[i+len(`href="`):]
			out = append(out, strings.ReplaceAll(h[:strings.Index(h, `"`)], "&amp;", "&"))
		}
	}
	return out
}

// TestArtifactLinksFetch: the screenshot links on the alert table and on
// the check page's recent failures fetch the PNG (200, image/png), for the
// current reference form (a file name under <data_dir>/artifacts) and for
// verdicts stored with the file's absolute or data_dir-relative path; the
// rest of the data dir is never served.
func TestArtifactLinksFetch(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	data := filepath.Join(root, "vigil-data")
	arts := filepath.Join(data, "artifacts")
	png := []byte("\x89PNG\r\n\x1a\nfake")
	for name, body := range map[string][]byte{
		"artifacts/new.png":     png,
		"artifacts/old-abs.png": png,
		"artifacts/old-rel.png": png,
		"vigil.db":              []byte("SECRET-DB"),
		"alerts.json":           []byte(`{"secret":true}`),
	} {
		p := filepath.Join(data, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := &memSource{now: func() time.Time { return t0 }}
	for i, ref := range []string{"new.png", filepath.Join(arts, "old-abs.png"), filepath.Join("vigil-data", "artifacts", "old-rel.png")} {
		v := verdict("shop", "eu", "r1", reporting.StateUnhealthy, "script", time.Duration(i+1)*time.Second)
		v.Artifact = ref
		src.add(v)
	}
	srv := serve(t, Options{Verdicts: src, ArtifactsDir: filepath.Join("vigil-data", "artifacts"), Alerts: func() []Alert {
		return []Alert{{Rule: "down", Check: "shop", Target: "eu", Severity: "page", Summary: "down", Since: t0, Artifact: "new.png"}}
	}})

	fetchPNG := func(link string) {
		t.Helper()
		code, h, body := get(t, srv, link)
		if code != http.StatusOK || h.Get("Content-Type") != "image/png" || body != string(png) {
			t.Errorf("GET %s = %d %q, want 200 image/png with the screenshot", link, code, h.Get("Content-Type"))
		}
	}
	_, _, index := get(t, srv, "/")
	links := hrefs(t, index, ">screenshot<")
	if len(links) != 1 || links[0] != "/artifacts/new.png" {
		t.Fatalf("alert table screenshot links %v, want [/artifacts/new.png]", links)
	}
	fetchPNG(links[0])

	_, _, page := get(t, srv, "/check/shop")
	links = hrefs(t, page, ">screenshot<")
	want := map[string]bool{"/artifacts/new.png": true, "/artifacts/old-abs.png": true, "/artifacts/old-rel.png": true}
	if len(links) != 3 {
		t.Fatalf("recent failures screenshot links %v, want %v", links, want)
	}
	for _, l := range links {
		if !want[l] {
			t.Errorf("recent failures link %s, want one of %v", l, want)
		}
		fetchPNG(l)
	}
	if strings.Contains(page, root) {
		t.Error("check page shows a filesystem path")
	}

	for _, p := range []string{"/artifacts/vigil.db", "/artifacts/alerts.json", "/artifacts/../vigil.db",
		"/artifacts/..%2fvigil.db", "/artifacts/..%2falerts.json", "/artifacts/%2e%2e/alerts.json", "/artifacts/artifacts/new.png"} {
		// Redirects are followed: the mux cleans "/artifacts/../x" to "/x".
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(srv.URL + p)
		if err != nil {
			t.Fatalf("GET %s: %v", p, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || strings.Contains(string(b), "SECRET") || strings.Contains(string(b), `"secret"`) {
			t.Errorf("GET %s = %d, want 404 and nothing of the data dir", p, resp.StatusCode)
		}
	}
}

// TestSilencedAlertMarked: an alert silenced by a maintenance window is
// listed with the words "silenced by <window>", not a colour alone.
func TestSilencedAlertMarked(t *testing.T) {
	srv := serve(t, Options{Verdicts: &memSource{now: func() time.Time { return t0 }}, Alerts: func() []Alert {
		return []Alert{
			{Rule: "down", Check: "shop", Severity: "page", Summary: "shop down", Since: t0, Silenced: "deploy-window"},
			{Rule: "slow", Check: "api", Severity: "ticket", Summary: "api slow", Since: t0},
		}
	}})
	_, _, body := get(t, srv, "/")
	rows := strings.Split(body, `<tr class="alert"`)[1:]
	if len(rows) != 2 {
		t.Fatalf("%d alert rows, want 2", len(rows))
	}
	for _, r := range rows {
		r = r[:strings.Index(r, "</tr>")]
		silenced := strings.Contains(r, "silenced by deploy-window")
		if strings.Contains(r, `data-alert-rule="down"`) != silenced {
			t.Errorf("row %q: silenced text %v, want it on the down alert only", r, silenced)
		}
	}
}

// TestCheckPageTargetFilter: /check/C?target=T (the alerts' status_url)
// shows only T's rows.
func TestCheckPageTargetFilter(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	for _, tg := range []string{"eu-origin", "us-origin"} {
		v := verdict("shop", tg, "r1", reporting.StateUnhealthy, "status", time.Second)
		v.Err = "failure on " + tg
		src.add(v)
	}
	srv := serve(t, Options{Verdicts: src})
	_, _, all := get(t, srv, "/check/shop")
	if !strings.Contains(all, "failure on eu-origin") || !strings.Contains(all, "failure on us-origin") {
		t.Fatal("unfiltered page lacks a target")
	}
	code, _, one := get(t, srv, "/check/shop?target=eu-origin")
	if code != 200 || !strings.Contains(one, "failure on eu-origin") || strings.Contains(one, "us-origin") {
		t.Errorf("?target=eu-origin: %d, shows eu %v, shows us %v; want only eu-origin", code,
			strings.Contains(one, "failure on eu-origin"), strings.Contains(one, "us-origin"))
	}
	if !strings.Contains(one, "Showing target <b>eu-origin</b> only") {
		t.Error("filtered page does not say which target it shows")
	}
}
