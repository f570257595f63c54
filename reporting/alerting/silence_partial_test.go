package alerting

import (
	"net/http"
	"strings"
	"testing"
)

// TestPartialSilenceSendsNothing: two alerts of one group fire and are
// notified; silencing one of them, and ending that silence, sends nothing
// (the group's set only shrank, then came back to what was notified), as
// in Alertmanager; a third alert that starts firing afterwards is notified
// at once, with the other two.
func TestPartialSilenceSendsNothing(t *testing.T) {
	r := newSilenceRig(t)
	sent := func() []string {
		var out []string
		for _, p := range r.hook.webhooks(t) {
			var ts []string
			for _, al := range p.Alerts {
				ts = append(ts, al.Target)
			}
			out = append(out, strings.Join(ts, "+"))
		}
		return out
	}
	r.eval("multi", "o1", "o2")
	if got := sent(); len(got) != 1 || got[0] != "o1+o2" {
		t.Fatalf("first notification: %q, want one listing o1 and o2", got)
	}
	code, body := r.call("POST", "/api/v1/silences", `{"check":"multi","target":"o2","for":"1h","by":"sre","why":"noisy"}`)
	if code != http.StatusCreated {
		t.Fatalf("POST: %d %s", code, body)
	}
	id := body[strings.Index(body, `"id":"`)+6:]
	id = id[:strings.Index(id, `"`)]
	r.eval("multi", "o1", "o2")
	r.eval("multi", "o1", "o2")
	if got := sent(); len(got) != 1 {
		t.Fatalf("after silencing o2: notifications %q, want none since the first", got[1:])
	}
	if code, _ := r.call("DELETE", "/api/v1/silences/"+id, ""); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	r.eval("multi", "o1", "o2")
	if got := sent(); len(got) != 1 {
		t.Fatalf("after the silence ended: notifications %q, want none since the first", got[1:])
	}
	r.eval("multi", "o1", "o2", "o3")
	if got := sent(); len(got) != 2 || got[1] != "o1+o2+o3" {
		t.Fatalf("after o3 fired: %q, want a second notification listing o1, o2 and o3", got)
	}
}
