package main

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

// TestPageShowsVerdictsWaitingForTheStore runs the binary with the
// embedded store, then forbids it to write files (as a full data dir
// does) and breaks the origin: the status page and /api/v1/verdicts show
// the pair unhealthy, the canary's fresh state, past the stored verdict's
// expiry (which read unknown: the store holds only the healthy verdict of
// before), under a one-line banner (and a Vigil-Notice header) naming the
// store, since when and its error. When the store takes writes again the
// banner goes.
func TestPageShowsVerdictsWaitingForTheStore(t *testing.T) {
	bin := buildVigil(t, t.TempDir())
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	port := freePorts(t, 1)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	path := filepath.Join(dir, "vigil.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`
agent: {listen: "127.0.0.1:%d", region: r1, data_dir: %q}
targets: [{name: o, url: %q}]
checks:
  - {name: up, targets: [o], interval: 1s, timeout: 500ms, http: {path: /healthz}}
`, port, filepath.Join(dir, "data"), o.URL())), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &checktest.SyncBuffer{} // a pipe: the file-size limit does not stop the log
	cmd := exec.Command(bin, "run", "-c", path)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("vigil log:\n%s", logs.String())
		}
	}()

	noticeRe := regexp.MustCompile(`(?s)<div id="notice"[^>]*>(.*?)</div>`)
	// state reads the pair's cell on the page, the banner, the pair's
	// state in the API and the API's Vigil-Notice header.
	state := func() (cell, banner, api, header string) {
		_, _, page := getHeader(t, base+"/")
		if i := strings.Index(page, `data-check="up"`); i >= 0 {
			if m := regexp.MustCompile(`data-state="(\w+)"`).FindStringSubmatch(page[i:]); m != nil {
				cell = m[1]
			}
		}
		if m := noticeRe.FindStringSubmatch(page); m != nil {
			banner = html.UnescapeString(strings.TrimSpace(m[1]))
		}
		code, hdr, body := getHeader(t, base+"/api/v1/verdicts")
		var vs []struct {
			Check, Target string
			State         string `json:"state"`
		}
		if code == 200 && json.Unmarshal([]byte(body), &vs) == nil {
			for _, v := range vs {
				if v.Check == "up" && v.Target == "o" {
					api = v.State
				}
			}
		}
		return cell, banner, api, hdr.Get(reporting.ReadNotesHeader)
	}
	waitFor(t, 15*time.Second, "the agent listening", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	waitFor(t, 20*time.Second, "the pair healthy on the page", func() bool {
		cell, _, api, _ := state()
		return cell == "healthy" && api == "healthy"
	})

	setFileSizeLimit(t, cmd.Process.Pid, 1)
	var health string
	waitFor(t, 15*time.Second, "/healthz: the store refuses writes", func() bool {
		_, health = do(t, "GET", base+"/healthz", "", nil)
		return strings.Contains(health, "sink embedded: writes failing since ")
	})
	since := regexp.MustCompile(`writes failing since (\S+) `).FindStringSubmatch(health)[1]
	if err := o.SetFault("503"); err != nil {
		t.Fatal(err)
	}
	// The store's verdict (healthy, from before) expires within 3 s; the
	// canary's fresh ones say unhealthy.
	var cell, banner, api, header string
	defer func() {
		if t.Failed() {
			t.Logf("last seen: page %q, API %q, banner %q, %s %q", cell, api, banner, reporting.ReadNotesHeader, header)
		}
	}()
	waitFor(t, 20*time.Second, "the pair unhealthy on the page and in the API while the store refuses writes", func() bool {
		cell, banner, api, header = state()
		return cell == "unhealthy" && api == "unhealthy"
	})
	time.Sleep(4 * time.Second) // past the expiry of anything the store holds
	cell, banner, api, header = state()
	if cell != "unhealthy" || api != "unhealthy" {
		t.Errorf("4 s later: page %q, API %q; want unhealthy (the verdicts waiting in memory)", cell, api)
	}
	wantStart := "store.embedded refuses writes since " + since + ": "
	wantEnd := ". The latest states shown include verdicts waiting in this process's memory for retry; history and uptime are incomplete from " + since + "."
	if !strings.HasPrefix(banner, wantStart) || !strings.HasSuffix(banner, wantEnd) || strings.Contains(banner, "\n") {
		t.Errorf("banner %q\nwant one line %q ERR %q", banner, wantStart, wantEnd)
	}
	// The page and the API are two requests: the store's error names the
	// batch it refused, which grows between them ("publish 4 verdicts",
	// then "publish 8 verdicts").
	count := regexp.MustCompile(`publish \d+ verdicts`)
	if count.ReplaceAllString(header, "publish N verdicts") != count.ReplaceAllString(banner, "publish N verdicts") {
		t.Errorf("%s: %q, want the banner's line %q", reporting.ReadNotesHeader, header, banner)
	}
	t.Logf("banner: %s", banner)

	setFileSizeLimit(t, cmd.Process.Pid, ^uint64(0))
	if err := o.SetFault("ok"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 40*time.Second, "the banner gone once the store takes writes", func() bool {
		cell, banner, _, header = state()
		return banner == "" && header == "" && cell != ""
	})
}
