package proxy

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAccessLogClientGoneHasTries: the line of a request whose client left
// while its origin worked (499) says how many origins were tried (it had
// no tries field).
func TestAccessLogClientGoneHasTries(t *testing.T) {
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			a := newBackend(t, "a")
			a.mode.Store(modeHang)
			path := filepath.Join(t.TempDir(), "access.log")
			cfg := pool1(PolicyFirst, a.srv.URL)
			cfg.AccessLog = path
			h := startWith(t, cfg, nil, true, engineName)
			client := &http.Client{Timeout: 300 * time.Millisecond}
			if resp, err := client.Get(h.front.URL + "/slow"); err == nil {
				resp.Body.Close()
				t.Fatal("the hanging origin answered")
			}
			var b []byte
			eventually(t, "the request's line (flushed within a second)", func() bool {
				b, _ = os.ReadFile(path)
				return len(b) > 0
			})
			var line map[string]any
			if err := json.Unmarshal([]byte(strings.TrimSpace(string(b))), &line); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			if line["status"] != 499.0 || line["tries"] != 1.0 {
				t.Errorf("line %s: want status 499 and tries 1", b)
			}
		})
	}
}
