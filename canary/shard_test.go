package canary

import (
	"fmt"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// `--shard i/n` splits the check × target pairs between n agents: shards
// 0..n-1 of n together run every pair exactly once, and each runs some.
func TestShardsSplitPairsWithoutOverlapOrGap(t *testing.T) {
	targets := map[string]string{}
	var names []string
	for i := 0; i < 5; i++ {
		n := fmt.Sprintf("t%d", i)
		targets[n] = fmt.Sprintf("http://127.0.0.1:%d", 10001+i)
		names = append(names, n)
	}
	var chs []CheckConfig
	for i := 0; i < 10; i++ {
		chs = append(chs, CheckConfig{Name: fmt.Sprintf("c%d", i), Targets: names,
			HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	}
	cfg := testConfig(t, targets, chs...)
	all, err := cfg.Compile(CompileOptions{Version: "test", DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	if len(all) != 50 {
		t.Fatalf("unsharded: %d pairs, want 50", len(all))
	}
	key := func(p Pair) string { return p.Check.Name + "@" + p.Target.Name }
	for _, n := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("of %d", n), func(t *testing.T) {
			owner := map[string]int{}
			for i := 0; i < n; i++ {
				pairs, err := cfg.Compile(CompileOptions{Version: "test", DataDir: t.TempDir(), Shard: Shard{Index: i, Of: n}})
				if err != nil {
					t.Fatalf("compile shard %d/%d: %v", i, n, err)
				}
				if len(pairs) == 0 {
					t.Errorf("shard %d/%d runs no pair of 50", i, n)
				}
				for _, p := range pairs {
					if prev, ok := owner[key(p)]; ok {
						t.Errorf("pair %s runs on shards %d and %d of %d", key(p), prev, i, n)
					}
					owner[key(p)] = i
				}
			}
			for _, p := range all {
				if _, ok := owner[key(p)]; !ok {
					t.Errorf("pair %s runs on no shard of %d", key(p), n)
				}
			}
		})
	}
}
