package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestDemoHookResolvedLine: the demo terminal's line for a resolved alert
// says the pair recovered; the summary it was firing with ("… down in 2
// regions") is shown as what it was, not as the current state.
func TestDemoHookResolvedLine(t *testing.T) {
	var mu sync.Mutex
	var term bytes.Buffer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		demoHook(&term, w, r)
	}))
	defer srv.Close()
	body := `{"status":"resolved","alerts":[
 {"status":"resolved","rule":"down","check":"asset","target":"origin-b","summary":"asset × origin-b down in 2 regions (ap-south, us-east): checksum"},
 {"status":"resolved","rule":"dead_man","check":"asset","summary":"no verdict of asset from ap-south"},
 {"status":"firing","rule":"down","check":"asset","target":"origin-c","summary":"asset × origin-c down in 2 regions (ap-south, us-east): ttfb"}]}`
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST: %d, want 204", resp.StatusCode)
	}
	mu.Lock()
	got := term.String()
	mu.Unlock()
	for _, want := range []string{
		"  ALERT RESOLVED asset × origin-b recovered (was down in 2 regions (ap-south, us-east): checksum)\n",
		"  ALERT RESOLVED asset recovered (was: no verdict of asset from ap-south)\n",
		"  ALERT FIRING   asset × origin-c down in 2 regions (ap-south, us-east): ttfb\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal lacks %q:\n%s", want, got)
		}
	}
}
