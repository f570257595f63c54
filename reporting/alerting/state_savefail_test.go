package alerting

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestStateSaveFailureLogRateLimited: while the state file cannot be
// written (here a directory stands at its path, so each try fails naming
// another temporary file, as on a full disk), the failure is logged once,
// then at most once a minute with how many lines were suppressed, and once
// when a save works again; it used to be logged at every evaluation (every
// 15 s).
func TestStateSaveFailureLogRateLimited(t *testing.T) {
	dir := t.TempDir()
	r := newRestartRig(t, filepath.Join(dir, "alerts.json"))
	a := r.start()
	if err := os.Mkdir(r.path, 0o700); err != nil {
		t.Fatal(err)
	}
	start := r.clock.Now()
	r.fire(a) // every step changes the state: each save is tried
	for range 12 {
		r.step(a, U)
	}
	failingFor := r.clock.Now().Sub(start)
	logs := r.logs.String()
	first := strings.Count(logs, "alerting: cannot save alert state; retrying on every evaluation")
	still := regexp.MustCompile(`alerting: still cannot save alert state" .*failures=\d+ suppressed=[1-9]\d*`).FindAllString(logs, -1)
	if first != 1 || len(still) == 0 || len(still) > int(failingFor/time.Minute) {
		t.Fatalf("%v of failing saves (every 15 s) logged %d first lines and %d later ones (want 1, then at most one a minute with suppressed=N):\n%s",
			failingFor, first, len(still), logs)
	}
	if strings.Contains(logs, "saved again") {
		t.Fatalf("recovery logged while the saves still fail:\n%s", logs)
	}

	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	r.step(a, H)
	r.step(a, H)
	logs = r.logs.String()
	if n := strings.Count(logs, "alerting: alert state saved again"); n != 1 || !regexp.MustCompile(`saved again" path=\S+ failures=\d+ suppressed=\d+ failed_for=`).MatchString(logs) {
		t.Fatalf("after the path is writable again: %d recovery lines, want 1 with failures, suppressed, failed_for:\n%s", n, logs)
	}
	b, err := os.ReadFile(r.path)
	var f stateFile
	if err != nil || json.Unmarshal(b, &f) != nil || f.Version != stateVersion {
		t.Fatalf("state file after recovery: %v %s", err, b)
	}
}
