package alerting

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSilencesAPI: POST /api/v1/silences silences a check (or one of its
// targets) for a while without a config change: its alerts are still
// evaluated and listed, with silenced naming the silence, and notify
// nobody; GET lists the silences, DELETE ends one, and they survive a
// restart (silences.json beside alerts.json). Writes need the admin token.
func TestSilencesAPI(t *testing.T) {
	r := newSilenceRig(t)
	if code, _ := r.call("POST", "/api/v1/silences", `{"check":"asset","for":"1h","by":"alice","why":"x"}`, true); code != http.StatusUnauthorized {
		t.Fatalf("POST without the token: %d", code)
	}
	if code, body := r.call("POST", "/api/v1/silences", `{"check":"asset","for":"200h","by":""}`); code != http.StatusBadRequest ||
		!strings.Contains(body, "by: required") || !strings.Contains(body, "why: required") || !strings.Contains(body, `for: \"200h\": must be above 0 and at most 7d`) {
		t.Fatalf("bad POST: %d %s", code, body)
	}
	code, body := r.call("POST", "/api/v1/silences", `{"check":"asset","target":"origin-b","for":"2h","by":"alice","why":"rebuilding origin-b"}`)
	var sb Silence
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &sb) != nil || sb.ID == "" || !sb.EndsAt.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("POST: %d %s", code, body)
	}
	// origin-b is silenced, origin-a is not.
	r.eval("asset", "origin-a", "origin-b")
	if got := r.notified(); got != "firing origin-a" {
		t.Fatalf("notified %q, want origin-a only", got)
	}
	for _, al := range r.a.Active() {
		if want := al.Target == "origin-b"; (al.Silenced != "") != want ||
			want && al.Silenced != "silence "+sb.ID+" by alice until 2026-11-02T12:00:00Z: rebuilding origin-b" {
			t.Fatalf("active %s silenced %q", al.Target, al.Silenced)
		}
	}
	// A silence of the whole check; then a restart keeps both.
	code, body = r.call("POST", "/api/v1/silences", `{"check":"asset","for":"30m","by":"bob","why":"deploy"}`)
	var sa Silence
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &sa) != nil {
		t.Fatalf("POST: %d %s", code, body)
	}
	r.restart()
	if got := r.a.Silences(); len(got) != 2 || got[0].ID != sa.ID || got[1].ID != sb.ID {
		t.Fatalf("after a restart: %+v", got)
	}
	r.eval("asset", "origin-a", "origin-b", "origin-c")
	if got := r.notified(); got != "firing origin-a" {
		t.Fatalf("with the check silenced: notified %q, want nothing new", got)
	}
	if code, body := r.call("GET", "/api/v1/silences", "", true); code != http.StatusOK || !strings.Contains(body, `"why":"deploy"`) || !strings.Contains(body, `"target":"origin-b"`) {
		t.Fatalf("GET: %d %s", code, body)
	}
	// Ending the check's silence: origin-c notifies at the next evaluation.
	if code, _ := r.call("DELETE", "/api/v1/silences/"+sa.ID, ""); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	if code, _ := r.call("DELETE", "/api/v1/silences/"+sa.ID, ""); code != http.StatusNotFound {
		t.Fatalf("DELETE again: %d", code)
	}
	r.eval("asset", "origin-a", "origin-b", "origin-c")
	if got := r.notified(); !strings.Contains(got, "firing origin-c") || strings.Contains(got, "firing origin-b") {
		t.Fatalf("after DELETE: notified %q, want origin-c and not origin-b", got)
	}
}
