package proxy

import (
	"fmt"
	"net/http"
	"testing"
)

// hashPool builds a hash pool of origins with the given weights (no
// listener needed: only Pick is asked) keyed on X-Key.
func hashPool(t *testing.T, weights ...int) *pool {
	t.Helper()
	var us []string
	for i := range weights {
		us = append(us, fmt.Sprintf("http://127.0.0.1:%d", 2000+i))
	}
	cfg := pool1(PolicyHash, us...)
	cfg.Pools[0].Hash.Key = "header:X-Key"
	for i, w := range weights {
		cfg.Pools[0].Origins[i].Weight = w
	}
	return start(t, cfg, nil, false).pool("web")
}

func keyReq(k string) *http.Request {
	r, _ := http.NewRequest("GET", "http://x/", nil)
	if k != "" {
		r.Header.Set("X-Key", k)
	}
	return r
}

// homeOf finds a key whose home (idle pool) is origin i.
func homeOf(t *testing.T, pl *pool, i int) string {
	t.Helper()
	for n := 0; n < 10000; n++ {
		k := fmt.Sprintf("key-%d", n)
		if pl.bal.Pick(keyReq(k), pl.all) == i {
			return k
		}
	}
	t.Fatalf("no key has origin %d as its home", i)
	return ""
}

// TestHashBoundedLoadWeighted: an origin's bound is its share of the pool's
// slots by weight (Envoy's hash_balance_factor, HAProxy's
// hash-balance-factor): a weight-8 origin carrying 8 of 10 requests in
// flight keeps its keys, where one bound for every origin (⌈1.25 × 10 ÷ 3⌉
// = 5) sent them to the weight-1 origins; and a weight-1 origin is bounded
// by its own small share.
func TestHashBoundedLoadWeighted(t *testing.T) {
	pl := hashPool(t, 1, 1, 8)
	heavy := homeOf(t, pl, 2)
	pl.origins[1].inflight.Add(1)
	pl.origins[2].inflight.Add(8)
	if got := pl.bal.Pick(keyReq(heavy), pl.all); got != 2 {
		t.Errorf("weight-8 origin with 8 of 9 in flight: the key went to %d, want its home 2", got)
	}
	light := homeOf(t, pl, 0)
	pl.origins[0].inflight.Add(3) // its share of ⌈1.25 × 13⌉ = 17 slots is 2
	if got := pl.bal.Pick(keyReq(light), pl.all); got == 0 {
		t.Error("weight-1 origin with 3 in flight (bound 2) kept the key")
	}
}

// TestHashBoundedLoadLowConcurrency: with four equal origins and one other
// request in flight on a key's home, the key stays home (Envoy's check:
// in flight ≤ slots); a bound counting the new request moved it, so with
// two clients 13-22% of requests left their home origin (cache misses).
func TestHashBoundedLoadLowConcurrency(t *testing.T) {
	pl := hashPool(t, 1, 1, 1, 1)
	k := homeOf(t, pl, 3)
	pl.origins[3].inflight.Add(1)
	if got := pl.bal.Pick(keyReq(k), pl.all); got != 3 {
		t.Errorf("one other request in flight on the home origin: key went to %d, want 3", got)
	}
	pl.origins[3].inflight.Add(1) // 2 in flight, pool slots ⌈1.25 × 3⌉ = 4, its share 1
	if got := pl.bal.Pick(keyReq(k), pl.all); got == 3 {
		t.Error("home origin with 2 in flight (bound 1) kept the key")
	}
}

// TestHashNoKeyByWeight: requests without the key are spread by weight,
// not evenly (nginx falls back to weighted round robin, Envoy to a random
// point on the ring).
func TestHashNoKeyByWeight(t *testing.T) {
	pl := hashPool(t, 1, 1, 8)
	var n [3]int
	for i := 0; i < 5000; i++ {
		n[pl.bal.Pick(keyReq(""), pl.all)]++
	}
	// Expected 500 / 500 / 4000.
	if n[2] < 3700 || n[2] > 4300 || n[0] < 350 || n[0] > 650 {
		t.Errorf("5000 requests without the key: %v, want about [500 500 4000]", n)
	}
}
