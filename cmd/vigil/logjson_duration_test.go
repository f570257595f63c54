package main

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestJSONLogDurations: with --log-format json a duration reads as in the
// text format ("for":"5s"), not as integer nanoseconds (5000000000).
func TestJSONLogDurations(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	lg, err := (&serveFlags{logLevel: "info", logFormat: "json"}).logger()
	os.Stderr = stderr
	if err != nil {
		t.Fatal(err)
	}
	lg.Warn("proxy: origin ejected", "for", 5*time.Second, "count", 3)
	w.Close()
	b, _ := io.ReadAll(r)
	if !strings.Contains(string(b), `"for":"5s"`) || !strings.Contains(string(b), `"count":3`) {
		t.Errorf("JSON line %s: want \"for\":\"5s\" and \"count\":3", b)
	}
}
