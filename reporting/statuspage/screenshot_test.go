package statuspage

import (
	"bytes"
	"context"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// chromium returns the Chromium binary or stops the test (fails under CI).
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("VIGIL_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("chromium")
	checktest.NeedDependency(t, "Chromium", err)
	return p
}

// screenshot renders url in headless Chromium at w×h and returns the PNG.
func screenshot(t *testing.T, bin, url string, w, h int) []byte {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--force-prefers-reduced-motion",
		"--screenshot="+out, "--window-size="+itoa(w)+","+itoa(h), url)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	return b
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestScreenshot renders the overview and a check page with sample data in
// real headless Chromium and checks the images are real renders (right size,
// many colours). With VIGIL_SCREENSHOT_DIR set it keeps them there.
func TestScreenshot(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no Chromium")
	}
	bin := chromium(t)
	fc := &FaultControl{Origins: []string{"origin-a", "origin-b", "origin-c"}, Open: true,
		Set: func(string, string) error { return nil }, Current: func(o string) string {
			if o == "origin-b" {
				return "corrupt"
			}
			return "ok"
		}}
	o := sampleOptions(sampleSource(), fc)
	o.Refresh = -1
	o.ArtifactsDir = t.TempDir()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	for _, c := range []struct {
		name, path string
		w, h       int
	}{
		{"statuspage.png", "/", 1280, 900},
		{"statuspage-full.png", "/", 1280, 1800},
		{"statuspage-check.png", "/check/asset", 1280, 2600},
		{"statuspage-script.png", "/check/checkout-flow", 1280, 2400},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := screenshot(t, bin, srv.URL+c.path, c.w, c.h)
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("decode png: %v", err)
			}
			if got := img.Bounds().Size(); got.X != c.w || got.Y != c.h {
				t.Fatalf("screenshot is %v, want %dx%d", got, c.w, c.h)
			}
			colours := map[uint32]bool{}
			for y := 0; y < c.h; y += 7 {
				for x := 0; x < c.w; x += 7 {
					r, g, b, _ := img.At(x, y).RGBA()
					colours[r>>8<<16|g>>8<<8|b>>8] = true
				}
			}
			if len(colours) < 50 {
				t.Fatalf("screenshot has %d colours: blank or unstyled page?", len(colours))
			}
			if dir := os.Getenv("VIGIL_SCREENSHOT_DIR"); dir != "" {
				if err := os.WriteFile(filepath.Join(dir, c.name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
