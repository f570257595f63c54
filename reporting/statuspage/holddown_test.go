package statuspage

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestHoldDownShown: a pair held unhealthy by flap damping (its runs pass)
// says so in its cell, with the end of the hold-down; once the hold-down
// is over (or the verdict stale) nothing is said.
func TestHoldDownShown(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	held := verdict("api", "origin-a", "eu-west", reporting.StateUnhealthy, "", 5*time.Second)
	held.HeldUntil = t0.Add(90 * time.Second)
	src.add(held)
	over := verdict("api", "origin-b", "eu-west", reporting.StateUnhealthy, "status", 5*time.Second)
	over.HeldUntil = t0.Add(-time.Second)
	src.add(over)
	srv := serve(t, Options{Verdicts: src})
	_, _, body := get(t, srv, "/")
	cs := cells(t, parseHTML(t, body))
	c := cs["api|origin-a|eu-west"]
	if c["data-state"] != "unhealthy" || !strings.Contains(c["text"], "flap hold-down · held until 2026-11-30 12:01:30 UTC") {
		t.Errorf("held pair shown as %v", c)
	}
	if c := cs["api|origin-b|eu-west"]; strings.Contains(c["text"], "hold-down") {
		t.Errorf("pair past its hold-down shown as %v", c)
	}
}
