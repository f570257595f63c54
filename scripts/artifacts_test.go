package scripts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestSaveArtifactReturnsNameUnderArtifactsDir: the reference a failure
// screenshot is stored under is its bare file name, which the status page
// serves at /artifacts/NAME; the file and its sidecar lie in
// <data_dir>/artifacts.
func TestSaveArtifactReturnsNameUnderArtifactsDir(t *testing.T) {
	for _, dataDir := range []string{t.TempDir(), "rel-data"} {
		t.Run(dataDir, func(t *testing.T) {
			if !filepath.IsAbs(dataDir) {
				t.Chdir(t.TempDir())
			}
			r := &run{runner: &Runner{o: Options{Check: "shop flow", DataDir: dataDir}}, target: checks.Target{Name: "eu/1"}}
			name, err := r.saveArtifact([]byte("\x89PNG fake"), "")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(name, "shop_flow~eu_1~") || !strings.HasSuffix(name, ".png") || strings.ContainsAny(name, `/\`) {
				t.Fatalf("reference %q, want a bare file name shop_flow~eu_1~<ts>.png", name)
			}
			if b, err := os.ReadFile(filepath.Join(dataDir, "artifacts", name)); err != nil || string(b) != "\x89PNG fake" {
				t.Fatalf("screenshot not at <data_dir>/artifacts/%s: %v", name, err)
			}
			if err := r.saveSidecar(name, failureInfo{Check: "shop flow"}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dataDir, "artifacts", strings.TrimSuffix(name, ".png")+".json")); err != nil {
				t.Fatalf("sidecar: %v", err)
			}
		})
	}
	r := &run{runner: &Runner{o: Options{Check: "c"}}}
	if name, err := r.saveArtifact([]byte("x"), ""); name != "" || err != nil {
		t.Errorf("without a data dir: %q, %v; want nothing written", name, err)
	}
}

// TestPruneArtifacts: artifacts older than the retention go, and per check
// × target only the newest runs' PNG + JSON pairs stay; nothing else in
// the artifacts directory, nothing outside it and nothing a symbolic link
// points to is touched.
func TestPruneArtifacts(t *testing.T) {
	data := t.TempDir()
	dir := ArtifactsDir(data)
	if err := os.MkdirAll(filepath.Join(dir, "keep-me"), 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	stamp := func(ago time.Duration) string { return now.Add(-ago).Format(artifactStamp) }
	write := func(path string) {
		t.Helper()
		if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// shop × eu: 25 runs a minute apart, PNG and note each.
	var shop []string
	for i := range 25 {
		base := "shop~eu~" + stamp(time.Duration(i)*time.Minute)
		write(filepath.Join(dir, base+".png"))
		write(filepath.Join(dir, base+".json"))
		shop = append(shop, base)
	}
	old := "login~us~" + stamp(8*24*time.Hour)    // past the retention
	recent := "login~us~" + stamp(6*24*time.Hour) // within it
	write(filepath.Join(dir, old+".png"))
	write(filepath.Join(dir, old+".json"))
	write(filepath.Join(dir, recent+".png"))
	// Named by earlier versions (<check>-<target>-<ts>): aged out, not
	// capped, as the name does not say which check × target wrote them.
	legacyOld := "shop-eu-" + stamp(9*24*time.Hour)
	write(filepath.Join(dir, legacyOld+".png"))
	write(filepath.Join(dir, legacyOld+".json"))
	var legacy []string
	for i := range 25 {
		base := "shop-eu-" + stamp(time.Duration(i)*time.Minute+time.Second)
		write(filepath.Join(dir, base+".png"))
		legacy = append(legacy, base)
	}
	// Not vigil's, or not a regular file: left alone whatever their age.
	outside := filepath.Join(data, "shop-eu-"+stamp(30*24*time.Hour)+".png")
	write(outside)
	others := []string{"notes.txt", "shop-eu-latest.png", "vigil.db"}
	for _, n := range others {
		write(filepath.Join(dir, n))
	}
	link := filepath.Join(dir, "shop-eu-"+stamp(40*24*time.Hour)+".png")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	subdir := filepath.Join(dir, "shop-eu-"+stamp(50*24*time.Hour)+".png")
	if err := os.Mkdir(subdir, 0o700); err != nil {
		t.Fatal(err)
	}

	n, err := PruneArtifacts(data, 7*24*time.Hour, 20, now)
	if err != nil {
		t.Fatal(err)
	}
	if n != 5*2+2+2 {
		t.Errorf("removed %d files, want 14 (5 shop × eu runs over the cap, the old login × us run, the old file pair of an earlier version)", n)
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	for i, base := range shop {
		for _, ext := range []string{".png", ".json"} {
			if got, want := exists(filepath.Join(dir, base+ext)), i < 20; got != want {
				t.Errorf("%s%s (run %d, newest first): exists %v, want %v", base, ext, i, got, want)
			}
		}
	}
	if exists(filepath.Join(dir, old+".png")) || exists(filepath.Join(dir, old+".json")) {
		t.Error("artifacts past the retention were kept")
	}
	if !exists(filepath.Join(dir, recent+".png")) {
		t.Error("an artifact within the retention was removed")
	}
	if exists(filepath.Join(dir, legacyOld+".png")) || exists(filepath.Join(dir, legacyOld+".json")) {
		t.Error("artifacts named by an earlier version past the retention were kept")
	}
	for _, base := range legacy {
		if !exists(filepath.Join(dir, base+".png")) {
			t.Errorf("%s.png, named by an earlier version and within the retention, was removed", base)
		}
	}
	for _, p := range append([]string{outside, link, subdir, filepath.Join(dir, "keep-me")}, others...) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if !exists(p) {
			t.Errorf("%s was removed; it is not a vigil artifact file in the artifacts directory", p)
		}
	}

	// Defaults (7 days, 20 per pair) and a missing directory.
	if n, err := PruneArtifacts(data, 0, 0, now); n != 0 || err != nil {
		t.Errorf("second prune removed %d (%v), want nothing left to do", n, err)
	}
	if n, err := PruneArtifacts(t.TempDir(), 0, 0, now); n != 0 || err != nil {
		t.Errorf("no artifacts dir: %d, %v", n, err)
	}
}

// TestPruneArtifactsKeepsPairsApart: check × target pairs whose names join
// alike with a '-' (api × eu-west, api-eu × west) or differ only in ':' and
// '_' keep their artifacts apart: the busy pair's runs, over the cap, prune
// only its own, and the other pair's only screenshot (the one its verdict
// links to) stays.
func TestPruneArtifactsKeepsPairsApart(t *testing.T) {
	for _, tc := range []struct{ lone, busy [2]string }{
		{lone: [2]string{"api", "eu-west"}, busy: [2]string{"api-eu", "west"}},
		{lone: [2]string{"api-eu", "west"}, busy: [2]string{"api", "eu-west"}},
		{lone: [2]string{"a:b", "x"}, busy: [2]string{"a_b", "x"}},
		{lone: [2]string{"a", "b-c-d"}, busy: [2]string{"a-b", "c-d"}},
	} {
		t.Run(tc.lone[0]+"×"+tc.lone[1], func(t *testing.T) {
			data := t.TempDir()
			save := func(pair [2]string) string {
				t.Helper()
				r := &run{runner: &Runner{o: Options{Check: pair[0], DataDir: data, ArtifactsPerPair: 3}},
					target: checks.Target{Name: pair[1]}}
				name, err := r.saveArtifact([]byte("\x89PNG fake"), "")
				if err != nil {
					t.Fatal(err)
				}
				return name
			}
			lone := save(tc.lone)
			var busy []string
			for range 5 {
				busy = append(busy, save(tc.busy))
			}
			if _, err := os.Stat(filepath.Join(ArtifactsDir(data), lone)); err != nil {
				t.Errorf("the only artifact of %s × %s (%s) was pruned by the runs of %s × %s: %v",
					tc.lone[0], tc.lone[1], lone, tc.busy[0], tc.busy[1], err)
			}
			entries, err := os.ReadDir(ArtifactsDir(data))
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1+3 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("artifacts %v, want the lone pair's one and the busy pair's newest 3", names)
			}
			for _, name := range busy[2:] {
				if _, err := os.Stat(filepath.Join(ArtifactsDir(data), name)); err != nil {
					t.Errorf("%s, one of its pair's newest 3, is gone", name)
				}
			}
		})
	}
}
