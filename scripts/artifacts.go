package scripts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// fileSafe keeps letters, digits, '.', '_' and '-', replacing the rest.
func fileSafe(s string) string {
	if s == "" {
		return "unnamed"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}

// ArtifactsDir is the directory failure artifacts are written to under a
// data dir: <dataDir>/artifacts. The status page serves this directory,
// and only this one, at /artifacts/.
func ArtifactsDir(dataDir string) string { return filepath.Join(dataDir, "artifacts") }

// saveArtifact writes a PNG as DataDir/artifacts/<check>-<target>-<UTC
// timestamp>.png and returns its artifact reference: the file name,
// relative to the artifacts directory (the form Result.Artifacts and
// Verdict.Artifact carry, and the status page serves at /artifacts/NAME).
// It returns "" without a DataDir. Screenshots show logged-in pages, so
// the file is 0600 in a 0700 directory.
func (r *run) saveArtifact(png []byte, suffix string) (string, error) {
	if r.runner.o.DataDir == "" {
		return "", nil
	}
	dir := ArtifactsDir(r.runner.o.DataDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	ts := time.Now().UTC().Format("20060102T150405.000000000Z")
	name := fmt.Sprintf("%s-%s-%s%s.png", fileSafe(r.runner.o.Check), fileSafe(r.target.Name), ts, suffix)
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o600); err != nil {
		return "", err
	}
	return name, nil
}

// saveSidecar writes info as JSON next to the PNG saveArtifact named name.
func (r *run) saveSidecar(name string, info failureInfo) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	side := strings.TrimSuffix(name, ".png") + ".json"
	return os.WriteFile(filepath.Join(ArtifactsDir(r.runner.o.DataDir), side), b, 0o600)
}
