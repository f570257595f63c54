package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMaxEjectedZeroNeverEjects: with max_ejected: 0% an origin answering
// 5xx past consecutive_5xx stays in service (GET /api/v1/origins shows it
// not ejected); with the key omitted (50% of two origins) it is ejected.
// Before, 0% read as the default and ejected it.
func TestMaxEjectedZeroNeverEjects(t *testing.T) {
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	defer bad.Close()
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "ok")
	}))
	defer good.Close()
	badName := strings.TrimPrefix(bad.URL, "http://")

	for _, c := range []struct {
		name, key string
		ejected   bool
	}{
		{"explicit zero", "max_ejected: 0%, ", false},
		{"omitted", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			app := startBadApp(t, fmt.Sprintf(`
agent: {region: test, data_dir: %s}
proxy:
  listen: 127.0.0.1:0
  pools:
    - {name: web, %spassive: {consecutive_5xx: 2}, retry: {tries: 1}, origins: [{url: %s}, {url: %s}]}
`, t.TempDir(), c.key, bad.URL, good.URL), nil, nil)
			client := &http.Client{}
			for range 10 {
				resp, err := client.Get("http://" + app.proxy + "/x")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			o := originState(t, app.base, badName)
			if got := o["passive_ejected"] == true; got != c.ejected {
				t.Errorf("passive_ejected %v after 10 requests (5 to the failing origin); want %v: %v", o["passive_ejected"], c.ejected, o)
			}
		})
	}
}
