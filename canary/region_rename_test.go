package canary

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

// TestReloadRegionRenameWarns: a reload that renames the agent's region
// logs a warning naming both names (readers know regions only by name, so
// the old name's last verdicts count as another region until they are
// stale); the next verdicts carry the new name. A reload that keeps the
// names says nothing.
func TestReloadRegionRenameWarns(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	var logs checktest.SyncBuffer
	mk := func(region string) *Config {
		cfg := testConfig(t, map[string]string{"t1": o.URL()},
			CheckConfig{Name: "a", Targets: []string{"t1"}, Interval: 100 * time.Millisecond, Rise: 1, HTTP: &checks.HTTPSpec{Path: "/healthz"}})
		cfg.Agent.Region = region
		return cfg
	}
	cfg := mk("us-east")
	c := start(t, cfg, compile(t, cfg), Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	waitFor(t, "a verdict from us-east", func() bool { v, ok := latestOf(c, "a", "t1"); return ok && v.Region == "us-east" })
	same := mk("us-east")
	c.Reload(same, compile(t, same))
	if strings.Contains(logs.String(), "agent.region or agent.vantage changed") {
		t.Fatalf("a reload keeping the region warned:\n%s", logs.String())
	}
	renamed := mk("us-east-2")
	c.Reload(renamed, compile(t, renamed))
	out := logs.String()
	for _, want := range []string{"agent.region or agent.vantage changed", "region=us-east-2", "was_region=us-east", "verdicts.max_age"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	waitFor(t, "a verdict from us-east-2", func() bool {
		v, ok := latestOf(c, "a", "t1")
		return ok && v.Region == "us-east-2" && v.State != reporting.StateUnknown
	})
}
