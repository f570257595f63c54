package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/canary"
)

// TestShardFlagUsageErrors: a --shard that is not i/n with 1 ≤ i ≤ n stops
// vigil run and vigil canary with exit 2 and a message naming the flag,
// before anything runs.
func TestShardFlagUsageErrors(t *testing.T) {
	path := writeConfig(t, healthzConfig(t.TempDir(), "http://127.0.0.1:9"))
	for _, role := range []string{"run", "canary"} {
		for _, bad := range []string{"0/2", "3/2", "x", "1/0", "-1/2", "2", "1/2x", "1/2/3", " 1/2"} {
			out, code := runCLI(t, role, "-c", path, "--shard", bad)
			want := fmt.Sprintf(`--shard: %q: want i/n with 1 ≤ i ≤ n, e.g. 2/4`, bad)
			if code != 2 || !strings.Contains(out, want) {
				t.Errorf("vigil %s --shard %s: exit %d, %q; want 2 and %q", role, bad, code, out, want)
			}
		}
	}
}

// shardOrigin counts requests per path and per the X-Shard header the
// canary of each shard sends.
type shardOrigin struct {
	mu   sync.Mutex
	hits map[string]map[string]int // path → X-Shard → requests
}

func (s *shardOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.hits[r.URL.Path] == nil {
		s.hits[r.URL.Path] = map[string]int{}
	}
	s.hits[r.URL.Path][r.Header.Get("X-Shard")]++
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (s *shardOrigin) snapshot() map[string]map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]map[string]int{}
	for p, m := range s.hits {
		out[p] = map[string]int{}
		for k, v := range m {
			out[p][k] = v
		}
	}
	return out
}

func (s *shardOrigin) reset() {
	s.mu.Lock()
	s.hits = map[string]map[string]int{}
	s.mu.Unlock()
}

// TestShardSplitsPairs runs two canaries of the built binary over the same
// twelve check × target pairs, one with --shard 1/2 and one with --shard
// 2/2, against one origin: each pair is probed by exactly one of them,
// together they probe every pair, and each runs the pairs the config
// compiles to for its shard.
func TestShardSplitsPairs(t *testing.T) {
	bin := buildVigil(t, t.TempDir())
	org := &shardOrigin{hits: map[string]map[string]int{}}
	srv := httptest.NewServer(org)
	defer srv.Close()

	const n = 12
	var paths []string
	for i := range n {
		paths = append(paths, fmt.Sprintf("/c%02d", i))
	}
	// The two configs differ only in agent (listen, data_dir) and in a
	// request header, which is not part of a pair's key: the shards see the
	// same pairs.
	config := func(shard string, port int, data string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "agent: {listen: \"127.0.0.1:%d\", region: r1, data_dir: %q}\n", port, data)
		fmt.Fprintf(&b, "defaults: {interval: 1s, timeout: 500ms}\ntargets: [{name: o, url: %q}]\nchecks:\n", srv.URL)
		for i, p := range paths {
			fmt.Fprintf(&b, "  - {name: c%02d, targets: [o], http: {path: %s, headers: {X-Shard: %q}}}\n", i, p, shard)
		}
		return b.String()
	}
	dir := t.TempDir()
	port := freePorts(t, 2)
	shards := []string{"1/2", "2/2"}
	want := map[string][]string{} // shard → paths it must probe
	for i, sh := range shards {
		path := filepath.Join(dir, fmt.Sprintf("shard%d.yaml", i+1))
		if err := os.WriteFile(path, []byte(config(sh, port+i, filepath.Join(dir, fmt.Sprintf("data%d", i+1)))), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := loadConfig(path, os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		pairs, err := cfg.Compile(canary.CompileOptions{Version: version, Shard: canary.Shard{Index: i, Of: 2}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pairs {
			want[sh] = append(want[sh], p.Check.HTTP.Path)
		}
		sort.Strings(want[sh])
	}
	t.Logf("pairs of shard 1/2: %v; of shard 2/2: %v", want["1/2"], want["2/2"])

	var procs []*loggedProc
	for i, sh := range shards {
		procs = append(procs, startLogged(t, bin, "canary", "-c", filepath.Join(dir, fmt.Sprintf("shard%d.yaml", i+1)), "--shard", sh))
	}
	logs := func() string {
		var b strings.Builder
		for i, p := range procs {
			fmt.Fprintf(&b, "--- shard %s stderr:\n%s", shards[i], p.stderr.String())
		}
		return b.String()
	}
	alive := func() {
		for _, p := range procs {
			p.alive(t)
		}
	}

	// Both canaries are running their schedulers once both have probed;
	// count from then on, so that neither had a head start.
	waitFor(t, 90*time.Second, "both canaries probing", func() bool {
		alive()
		seen := map[string]bool{}
		for _, m := range org.snapshot() {
			for sh := range m {
				seen[sh] = true
			}
		}
		return (len(want["1/2"]) == 0 || seen["1/2"]) && (len(want["2/2"]) == 0 || seen["2/2"])
	})
	org.reset()
	// Every pair runs once a second: three runs of each pair are three
	// chances for the other canary to probe it too, were it running it.
	waitFor(t, 90*time.Second, "every path probed three times", func() bool {
		alive()
		hits := org.snapshot()
		for _, p := range paths {
			total := 0
			for _, c := range hits[p] {
				total += c
			}
			if total < 3 {
				return false
			}
		}
		return true
	})
	hits := org.snapshot()
	got := map[string][]string{}
	for _, p := range paths {
		var by []string
		for sh := range hits[p] {
			by = append(by, sh)
		}
		sort.Strings(by)
		if len(by) != 1 {
			t.Errorf("%s probed by shards %q (%v), want by exactly one", p, by, hits[p])
		}
		for _, sh := range by {
			got[sh] = append(got[sh], p)
		}
	}
	for _, sh := range shards {
		sort.Strings(got[sh])
		if !slices.Equal(got[sh], want[sh]) {
			t.Errorf("--shard %s probed %v, want %v (its pairs of the config)", sh, got[sh], want[sh])
		}
	}
	if extra := len(hits) - len(paths); extra > 0 {
		t.Errorf("requests for paths no check names: %v", hits)
	}
	for i, p := range procs {
		if code := p.stop(t); code != 0 {
			t.Errorf("--shard %s: exit %d after SIGTERM, want 0", shards[i], code)
		}
	}
	if t.Failed() {
		t.Log(logs())
	}
}
