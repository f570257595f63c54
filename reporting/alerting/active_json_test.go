package alerting

import (
	"encoding/json"
	"testing"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestActiveJSONEmptyArray: GET /api/v1/alerts serves Active as JSON; with
// nothing firing that is `[]`, as Alertmanager answers, not `null`
// (`jq '.[]'` and len() on null break clients).
func TestActiveJSONEmptyArray(t *testing.T) {
	h := newHarness(t, t0, Config{}, nil)
	for _, when := range []string{"before the first evaluation", "after a healthy evaluation"} {
		b, err := json.Marshal(h.a.Active())
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != "[]" {
			t.Errorf("%s: /api/v1/alerts body %s, want []", when, b)
		}
		h.tick(map[string]reporting.State{"eu": reporting.StateHealthy})
	}
}
