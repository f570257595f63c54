package scripts

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// failureInfo is written next to a failure screenshot, as <name>.json.
type failureInfo struct {
	Check    string    `json:"check"`
	Target   string    `json:"target"`
	Step     int       `json:"step"`
	StepName string    `json:"step_name"`
	Kind     string    `json:"kind"`
	Cause    string    `json:"cause"`
	Error    string    `json:"error"`
	URL      string    `json:"url"`
	At       time.Time `json:"at"`
	// What the page reported during the run (at most 100 each).
	ConsoleErrors  []string `json:"console_errors,omitempty"`
	FailedRequests []string `json:"failed_requests,omitempty"`
}

// fileSafe is a check or target name as it appears in artifact names: letters,
// digits, '.', '_' and '-' are kept, ':' becomes '+' and anything else '_'.
// For the names the config allows (letters, digits and _ . : -) it is one to
// one, and it never contains '~', which separates the parts of an artifact
// name.
func fileSafe(s string) string {
	if s == "" {
		return "unnamed"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		case r == ':':
			return '+'
		}
		return '_'
	}, s)
}

// artifactPrefix is the part of an artifact name that names its check ×
// target: <check>~<target>.
func artifactPrefix(check, target string) string {
	return fileSafe(check) + "~" + fileSafe(target)
}

// ArtifactsDir is the directory failure artifacts are written to under a
// data dir: <dataDir>/artifacts. The status page serves this directory,
// and only this one, at /artifacts/.
func ArtifactsDir(dataDir string) string { return filepath.Join(dataDir, "artifacts") }

// artifactStamp is the UTC timestamp format of artifact names.
const artifactStamp = "20060102T150405.000000000Z"

// saveArtifact writes a PNG as DataDir/artifacts/<check>~<target>~<UTC
// timestamp>.png (see fileSafe) and returns its artifact reference: the file name,
// relative to the artifacts directory (the form Result.Artifacts and
// Verdict.Artifact carry, and the status page serves at /artifacts/NAME).
// It then prunes the directory (PruneArtifacts with the runner's
// retention). It returns "" without a DataDir. Screenshots show logged-in pages, so
// the file is 0600 in a 0700 directory.
func (r *run) saveArtifact(png []byte, suffix string) (string, error) {
	if r.runner.o.DataDir == "" {
		return "", nil
	}
	dir := ArtifactsDir(r.runner.o.DataDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	ts := time.Now().UTC().Format(artifactStamp)
	name := fmt.Sprintf("%s~%s%s.png", artifactPrefix(r.runner.o.Check, r.target.Name), ts, suffix)
	if err := writeArtifact(dir, name, png); err != nil {
		return "", err
	}
	// The new file is its pair's newest, and is kept.
	r.runner.pruneArtifacts(time.Now())
	return name, nil
}

// saveSidecar writes info as JSON next to the PNG saveArtifact named name.
func (r *run) saveSidecar(name string, info failureInfo) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	side := strings.TrimSuffix(name, ".png") + ".json"
	return writeArtifact(ArtifactsDir(r.runner.o.DataDir), side, b)
}

// writeArtifact writes data as dir/name (0600), whole or not at all: it
// writes a temporary file in dir and renames it, and removes the
// temporary file when a write fails (a full disk, a file size limit), so
// that no empty or cut file bears an artifact's name. A failure is logged
// (WARN, at most once per artifactWarnEvery) and returned.
func writeArtifact(dir, name string, data []byte) error {
	err := func() error {
		f, err := os.CreateTemp(dir, "."+name+".tmp*")
		if err != nil {
			return err
		}
		tmp := f.Name()
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, filepath.Join(dir, name))
		}
		if err != nil {
			os.Remove(tmp)
		}
		return err
	}()
	if err != nil {
		warnArtifact(filepath.Join(dir, name), err)
	}
	return err
}

// artifactWarnEvery is how often, at most, a failure to write an
// artifact is logged; the failures in between are counted in the next
// message.
const artifactWarnEvery = time.Minute

var (
	artifactWarnMu         sync.Mutex
	artifactWarnAt         time.Time
	artifactWarnSuppressed int
)

// warnArtifact logs that the artifact file could not be written.
func warnArtifact(file string, err error) {
	artifactWarnMu.Lock()
	defer artifactWarnMu.Unlock()
	now := time.Now()
	if !artifactWarnAt.IsZero() && now.Sub(artifactWarnAt) < artifactWarnEvery {
		artifactWarnSuppressed++
		return
	}
	slog.Warn("artifact not written", "file", file, "err", err, "not_logged_since_last", artifactWarnSuppressed)
	artifactWarnAt, artifactWarnSuppressed = now, 0
}

// Artifact retention. Every browser run that writes an artifact prunes the
// artifacts directory, and browser runs sweep it once at their first run in
// the process and then every artifactSweepEvery, so that a failing check
// cannot fill the disk.
const (
	// DefaultArtifactMaxAge is how long artifacts are kept when
	// Options.ArtifactMaxAge is 0: the embedded store's default retention.
	// The agent sets Options.ArtifactMaxAge to store.embedded.retention when
	// the embedded store is on, so a stored verdict's screenshot lives as
	// long as the verdict.
	DefaultArtifactMaxAge = 7 * 24 * time.Hour
	// DefaultArtifactsPerPair is how many runs' artifacts (a PNG and its
	// JSON note) are kept per check × target: the newest ones.
	DefaultArtifactsPerPair = 20
	// artifactSweepEvery is how often browser runs sweep the directory
	// when they write nothing.
	artifactSweepEvery = 10 * time.Minute
)

// artifactName matches the files saveArtifact and saveSidecar write:
// <check>~<target>~<UTC timestamp><suffix>.png|.json. Group 1 is the
// check × target prefix, group 2 the run's stamp (timestamp and suffix)
// that a PNG and its note share, group 3 the timestamp. fileSafe never
// emits '~', so the prefix names one check × target.
var artifactName = regexp.MustCompile(`^([A-Za-z0-9._+-]+~[A-Za-z0-9._+-]+)~((\d{8}T\d{6}\.\d{9}Z)[A-Za-z0-9_-]*)\.(png|json)$`)

// legacyArtifactName matches the names earlier versions wrote,
// <check>-<target>-<UTC timestamp>.png|.json, whose prefix does not tell
// check from target ("api-eu-west" is api × eu-west or api-eu × west).
// Such files are only deleted by age, never by the per-pair cap.
var legacyArtifactName = regexp.MustCompile(`^(.+)-((\d{8}T\d{6}\.\d{9}Z)[A-Za-z0-9_-]*)\.(png|json)$`)

// PruneArtifacts deletes, in <dataDir>/artifacts only, the artifacts older
// than maxAge (by the UTC timestamp in their names) and, per check ×
// target, those of all but the newest keep runs. A run's PNG and its JSON
// note go together. Files named by earlier versions
// (<check>-<target>-<timestamp>, see legacyArtifactName) are only deleted
// by age. Only regular files named the way vigil names
// artifacts are deleted: anything else in the directory, subdirectories
// and what symbolic links point to are left alone. maxAge <= 0 and
// keep <= 0 take the defaults. It returns how many files it deleted; a
// missing directory is not an error.
func PruneArtifacts(dataDir string, maxAge time.Duration, keep int, now time.Time) (int, error) {
	if dataDir == "" {
		return 0, nil
	}
	if maxAge <= 0 {
		maxAge = DefaultArtifactMaxAge
	}
	if keep <= 0 {
		keep = DefaultArtifactsPerPair
	}
	root, err := os.OpenRoot(ArtifactsDir(dataDir))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pruning artifacts: %w", err)
	}
	defer root.Close()
	f, err := root.Open(".")
	if err != nil {
		return 0, fmt.Errorf("pruning artifacts: %w", err)
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return 0, fmt.Errorf("pruning artifacts: %w", err)
	}
	type run struct {
		stamp string
		at    time.Time
		files []string
	}
	byPair := map[string]map[string]*run{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		m := artifactName.FindStringSubmatch(e.Name())
		pair := ""
		if m != nil {
			pair = m[1]
		} else if m = legacyArtifactName.FindStringSubmatch(e.Name()); m != nil {
			// A group of its own per run: aged out, not capped.
			pair = "\x00" + m[1] + "\x00" + m[2]
		} else {
			continue
		}
		at, err := time.Parse(artifactStamp, m[3])
		if err != nil {
			continue
		}
		runs := byPair[pair]
		if runs == nil {
			runs = map[string]*run{}
			byPair[pair] = runs
		}
		r := runs[m[2]]
		if r == nil {
			r = &run{stamp: m[2], at: at}
			runs[m[2]] = r
		}
		r.files = append(r.files, e.Name())
	}
	cutoff := now.Add(-maxAge)
	removed := 0
	var errs []error
	for _, runs := range byPair {
		list := make([]*run, 0, len(runs))
		for _, r := range runs {
			list = append(list, r)
		}
		slices.SortFunc(list, func(a, b *run) int { return strings.Compare(b.stamp, a.stamp) }) // newest first
		for i, r := range list {
			if i < keep && !r.at.Before(cutoff) {
				continue
			}
			for _, name := range r.files {
				err := root.Remove(name)
				switch {
				case err == nil:
					removed++
				case !errors.Is(err, fs.ErrNotExist): // a concurrent prune got there first
					errs = append(errs, err)
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("pruning artifacts: %w", err)
	}
	return removed, nil
}

// lastSweep is when each artifacts directory was last swept, by data dir.
var lastSweep sync.Map // string → *atomic.Int64 (unix nanoseconds)

// sweepArtifacts prunes the artifacts directory when this process has not
// done so in artifactSweepEvery: at its first browser run, then
// periodically while browser checks run.
func (rn *Runner) sweepArtifacts() {
	if rn.o.DataDir == "" {
		return
	}
	v, _ := lastSweep.LoadOrStore(rn.o.DataDir, new(atomic.Int64))
	last := v.(*atomic.Int64)
	now := time.Now()
	prev := last.Load()
	if prev != 0 && now.Sub(time.Unix(0, prev)) < artifactSweepEvery {
		return
	}
	if !last.CompareAndSwap(prev, now.UnixNano()) {
		return // another run sweeps
	}
	rn.pruneArtifacts(now)
}

// pruneArtifacts applies the runner's retention and logs what went wrong.
func (rn *Runner) pruneArtifacts(now time.Time) {
	n, err := PruneArtifacts(rn.o.DataDir, rn.o.ArtifactMaxAge, rn.o.ArtifactsPerPair, now)
	if err != nil {
		slog.Warn("artifacts", "dir", ArtifactsDir(rn.o.DataDir), "err", err)
	}
	if n > 0 {
		slog.Debug("artifacts pruned", "dir", ArtifactsDir(rn.o.DataDir), "removed", n)
	}
}
