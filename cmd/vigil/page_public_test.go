package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestPublicPageOnItsOwnListener: status_page.public.listen serves the
// public page on its own listener, showing the listed check by its public
// name and not the other one nor the origin's address; the agent's API is
// not there; the agent listener keeps the full page.
func TestPublicPageOnItsOwnListener(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "vigil.yaml")
	cfg := fmt.Sprintf(`agent: {region: r1, data_dir: %q}
targets: [{name: o, url: %q}]
checks:
  - {name: often, targets: [o], interval: 1s, timeout: 500ms, rise: 1, http: {path: /healthz}}
  - {name: private-admin, targets: [o], interval: 1s, timeout: 500ms, http: {path: /healthz}}
status_page:
  public:
    listen: 127.0.0.1:0
    title: Acme status
    checks: [{check: often, name: Web shop}]
`, filepath.Join(dir, "data"), o.URL())
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a, stop := startApp(t, path, roles{canary: true, page: true})
	defer stop()
	get := func(base, p string) (int, string) {
		resp, err := http.Get("http://" + base + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var body string
	waitFor(t, 20*time.Second, "the public page showing the check operational", func() bool {
		pub := a.PublicAddr()
		if pub == "" {
			return false
		}
		_, body = get(pub, "/")
		return strings.Contains(body, `data-public-check="Web shop" data-state="healthy"`)
	})
	originHost := strings.TrimPrefix(o.URL(), "http://")
	for _, leak := range []string{"private-admin", originHost, ">often<", "r1"} {
		if strings.Contains(body, leak) {
			t.Errorf("the public page shows %q", leak)
		}
	}
	if !strings.Contains(body, "<title>Acme status status</title>") && !strings.Contains(body, ">Acme status<") {
		t.Errorf("the public page lacks its title:\n%.2000s", body)
	}
	for _, p := range []string{"/api/v1/verdicts", "/metrics", "/healthz", "/check/often", "/probe?module=often&target=x"} {
		if code, _ := get(a.PublicAddr(), p); code != 404 {
			t.Errorf("GET %s on the public listener: %d, want 404", p, code)
		}
	}
	if _, full := get(a.Addr(), "/"); !strings.Contains(full, `data-check="private-admin"`) {
		t.Errorf("the agent's own page lost a check:\n%.2000s", full)
	}
}

// TestPublicListenInUse: a public page address already taken fails the
// start, naming the key.
func TestPublicListenInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "vigil.yaml")
	cfg := fmt.Sprintf(`agent: {region: r1, data_dir: %q}
targets: [{name: o, url: %q}]
checks:
  - {name: often, targets: [o], interval: 1s, timeout: 500ms, http: {path: /healthz}}
status_page:
  public: {listen: %q, checks: [often]}
`, filepath.Join(dir, "data"), o.URL(), busy.Addr().String())
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(c, appOptions{roles: roles{canary: true, page: true}, listener: ln, log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = a.Run(ctx)
	want := "status_page.public.listen: " + busy.Addr().String() + " already in use"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Run: %v, want %q", err, want)
	}
}
