package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// A proxy whose canary stops answering says so in VerdictHealth until reads
// succeed again.
func TestVerdictHealthTracksUnreadableSource(t *testing.T) {
	a := newBackend(t, "a")
	var down atomic.Bool
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "gone", http.StatusBadGateway)
			return
		}
		json.NewEncoder(w).Encode([]reporting.Verdict{})
	}))
	defer canary.Close()
	cfg := pool1(PolicyRoundRobin, urls(a)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	src := HTTPSource(canary.URL, &http.Client{Timeout: time.Second})
	h := start(t, cfg, src, true)
	time.Sleep(60 * time.Millisecond)
	if err := h.p.VerdictHealth(); err != nil {
		t.Fatalf("readable source: VerdictHealth = %v", err)
	}
	down.Store(true)
	var first string
	eventually(t, "VerdictHealth reports the failing source", func() bool {
		if err := h.p.VerdictHealth(); err != nil {
			first = err.Error()
			return true
		}
		return false
	})
	want := "from " + canary.URL + "/api/v1/verdicts: "
	if !strings.HasPrefix(first, "verdicts unreadable since ") || !strings.Contains(first, want) || !strings.Contains(first, "status 502") {
		t.Fatalf("VerdictHealth = %q, want \"verdicts unreadable since T %s… status 502\"", first, want)
	}
	time.Sleep(60 * time.Millisecond) // more failed reads: "since" stays put
	if got := h.p.VerdictHealth(); got == nil || got.Error() != first {
		t.Fatalf("after more failures VerdictHealth = %v, want unchanged %q", got, first)
	}
	down.Store(false)
	eventually(t, "VerdictHealth clears when reads succeed", func() bool { return h.p.VerdictHealth() == nil })
}

// A canary that is gone altogether (connection refused) is reported too.
func TestVerdictHealthSourceGone(t *testing.T) {
	a := newBackend(t, "a")
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode([]reporting.Verdict{})
	}))
	cfg := pool1(PolicyRoundRobin, urls(a)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	h := start(t, cfg, HTTPSource(canary.URL, &http.Client{Timeout: time.Second}), true)
	canary.Close()
	eventually(t, "VerdictHealth reports the stopped canary", func() bool {
		err := h.p.VerdictHealth()
		return err != nil && strings.Contains(err.Error(), "from "+canary.URL+"/api/v1/verdicts: ")
	})
}
