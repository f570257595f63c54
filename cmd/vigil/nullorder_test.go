package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoValueErrorsInFileOrder: "no value" errors are listed as the keys
// stand in the file (checks[2] before checks[10]), and a list key with no
// items is asked whether they are all commented out.
func TestNoValueErrorsInFileOrder(t *testing.T) {
	var b strings.Builder
	b.WriteString("targets: [{name: o, url: \"http://127.0.0.1:9\"}]\nchecks:\n")
	for i := 0; i < 11; i++ {
		b.WriteString("  - name: c" + string(rune('a'+i)) + "\n    targets: [o]\n    http: {path: /}\n")
		if i == 2 || i == 10 {
			b.WriteString("    expect: {checksum: }\n")
		}
	}
	b.WriteString("alerting:\n  receivers:\n    # - {name: am, alertmanager: {url: \"http://127.0.0.1:9093\"}}\n")
	path := filepath.Join(t.TempDir(), "v.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := loadConfig(path, func(string) (string, bool) { return "", false })
	if err == nil {
		t.Fatal("loaded a file with keys without values")
	}
	msg := err.Error()
	i2, i10 := strings.Index(msg, "checks[2].expect.checksum: no value"), strings.Index(msg, "checks[10].expect.checksum: no value")
	if i2 < 0 || i10 < 0 || i2 > i10 {
		t.Errorf("want checks[2] reported before checks[10]:\n%s", msg)
	}
	if !strings.Contains(msg, "alerting.receivers: no value (omit the key, or give items: are they all commented out?)") {
		t.Errorf("a list key with its items commented out is not asked about them:\n%s", msg)
	}
}
