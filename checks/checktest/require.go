package checktest

import (
	"os"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true), where every real
// dependency (Chromium, InfluxDB, Alertmanager, peers) must be present.
func InCI() bool { return os.Getenv("CI") == "true" }

// NeedDependency stops a test that needs a real component which is missing:
// with CI=true the test fails; elsewhere it is skipped with a loud reason.
// It does nothing when err is nil.
func NeedDependency(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if InCI() {
		t.Fatalf("REQUIRED DEPENDENCY MISSING (CI=true): %s: %v", what, err)
	}
	t.Skipf("SKIPPING: %s is not available here (%v); CI installs it via .ci/setup", what, err)
}
