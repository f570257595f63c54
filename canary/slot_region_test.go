package canary

import (
	"fmt"
	"testing"
	"time"
)

// TestSlotsDifferByRegion: the canaries of several regions probing one pair
// take different slots of its interval (so they do not hit the origin at
// once, and the first to see a fault sees it sooner), while one canary
// restarted keeps its slots.
func TestSlotsDifferByRegion(t *testing.T) {
	interval := 60 * time.Second
	start := t0.Add(7 * time.Second)
	regions := []string{"eu-west", "us-east", "ap-south"}
	same := 0
	for i := range 40 {
		key := fmt.Sprintf("check%d\x00target%d\x00http://origin-%d/", i%5, i, i)
		offsets := map[time.Duration]string{}
		for _, r := range regions {
			cfg := &Config{Agent: AgentConfig{Region: r, Vantage: "v1"}}
			p := plan{interval: interval}
			first := p.first(slotKey(key, cfg), start)
			again := plan{interval: interval}
			if later := again.first(slotKey(key, cfg), start.Add(12*time.Second)); later.Sub(first)%interval != 0 {
				t.Fatalf("%q in %s: a restart 12s later moved the slot by %s", key, r, later.Sub(first)%interval)
			}
			off := time.Duration(first.UnixNano() % int64(interval))
			if prev, dup := offsets[off]; dup {
				t.Errorf("%q: regions %s and %s share the slot at %s of the interval", key, prev, r, off)
			}
			offsets[off] = r
		}
		plain, eu := plan{interval: interval}, plan{interval: interval}
		if plain.first(key, start).Equal(eu.first(slotKey(key, &Config{Agent: AgentConfig{Region: "eu-west", Vantage: "v1"}}), start)) {
			same++
		}
	}
	if same > 1 {
		t.Errorf("%d of 40 pairs have the same slot with and without the region in the hash: the region is not part of it", same)
	}
}
