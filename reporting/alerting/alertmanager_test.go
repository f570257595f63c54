package alerting

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

// alertmanagerBin is Debian's prometheus-alertmanager.
const alertmanagerBin = "/usr/bin/prometheus-alertmanager"

// startAlertmanager runs a real Alertmanager on a free loopback port with
// gossip off and a temporary storage path, and returns its base URL once
// /-/ready answers.
func startAlertmanager(t *testing.T) string {
	t.Helper()
	return startAlertmanagerWith(t, "route:\n  receiver: blackhole\n  group_wait: 1s\nreceivers:\n  - name: blackhole\n")
}

// startAlertmanagerWith is startAlertmanager with the configuration yml.
func startAlertmanagerWith(t *testing.T, yml string) string {
	t.Helper()
	bin, err := exec.LookPath(alertmanagerBin)
	checktest.NeedDependency(t, "prometheus-alertmanager ("+alertmanagerBin+")", err)
	dir := t.TempDir()
	conf := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(conf, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+conf, "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--cluster.listen-address=", "--log.level=warn")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		checktest.NeedDependency(t, "prometheus-alertmanager", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case <-exited:
			t.Fatalf("alertmanager exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("alertmanager not ready after 30s: %v\n%s", err, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// amGot is what GET /api/v2/alerts returns, in part.
type amGot struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	Status      struct {
		State       string   `json:"state"`
		InhibitedBy []string `json:"inhibitedBy"`
	} `json:"status"`
}

func getAlerts(t *testing.T, base string) []amGot {
	t.Helper()
	resp, err := http.Get(base + "/api/v2/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v2/alerts: %d %s", resp.StatusCode, b)
	}
	var as []amGot
	if err := json.Unmarshal(b, &as); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return as
}

// evalDelivered evaluates once, waits (up to 20s) for the deliveries and
// fails the test if any of them failed.
func evalDelivered(t *testing.T, a *Alerter) {
	t.Helper()
	if err := a.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if f := a.DeliveryFailures(); len(f) > 0 {
		t.Fatalf("delivery failures: %v", f)
	}
}

func TestRealAlertmanager(t *testing.T) {
	base := startAlertmanager(t)
	// Alertmanager judges startsAt/endsAt against its own clock, so the
	// fake clock follows real time here.
	clock := &fakeClock{t: time.Now()}
	store := &memStore{clock: clock.Now}
	a, err := New(Config{Quorum: 2, Down: DownRule{For: time.Second}, StatusPageURL: "http://127.0.0.1:9470",
		Receivers: []Receiver{{Name: "am", Alertmanager: &AlertmanagerConfig{URL: base}}},
		Retry:     RetryConfig{Backoff: 10 * time.Millisecond}},
		nil, store, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	step := func(st reporting.State) {
		t.Helper()
		clock.Set(time.Now())
		for _, r := range []string{"eu", "us", "ap"} {
			s := st
			if r == "ap" {
				s = reporting.StateHealthy
			}
			store.add(verdict("asset", "origin-a", r, clock.Now().Add(-time.Millisecond), s, 15*time.Second))
		}
		evalDelivered(t, a)
	}
	step(reporting.StateUnhealthy)
	time.Sleep(1100 * time.Millisecond) // down.for = 1s
	step(reporting.StateUnhealthy)
	if len(a.Active()) != 1 {
		t.Fatalf("active: %+v", a.Active())
	}

	var found *amGot
	for _, al := range getAlerts(t, base) {
		if al.Labels["alertname"] == "VigilCheckDown" {
			found = &al
		}
	}
	if found == nil {
		t.Fatalf("alert not in Alertmanager: %+v", getAlerts(t, base))
	}
	want := map[string]string{"alertname": "VigilCheckDown", "rule": "down", "severity": "page", "check": "asset",
		"target": "origin-a", "source": "vigil"}
	if fmt.Sprint(found.Labels) != fmt.Sprint(want) {
		t.Fatalf("labels %v, want %v", found.Labels, want)
	}
	if found.Status.State != "active" || found.Annotations["regions"] != "eu,us" ||
		!strings.Contains(found.Annotations["summary"], "down in 2 regions") || !found.EndsAt.After(time.Now()) {
		t.Fatalf("alert: %+v", found)
	}

	// Re-sent while active: Alertmanager keeps one alert, endsAt moves on.
	step(reporting.StateUnhealthy)
	if n := len(getAlerts(t, base)); n != 1 {
		t.Fatalf("%d alerts after a re-send, want 1", n)
	}

	step(reporting.StateHealthy) // resolve: endsAt = now
	deadline := time.Now().Add(20 * time.Second)
	for {
		as := getAlerts(t, base)
		gone := true
		for _, al := range as {
			if al.Labels["alertname"] == "VigilCheckDown" && al.Status.State == "active" && al.EndsAt.After(time.Now()) {
				gone = false
			}
		}
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alert still active 20s after resolve: %+v", as)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestExampleAlertmanagerInhibitsPrometheusDuplicate runs a real
// Alertmanager with examples/prometheus/alertmanager.yml and posts the same
// page from vigil's receiver (source="vigil") and from the generated
// Prometheus rules (source="prometheus"): the Prometheus one is inhibited,
// so the pair pages once; another check's Prometheus alert is not.
func TestExampleAlertmanagerInhibitsPrometheusDuplicate(t *testing.T) {
	yml, err := os.ReadFile("../../examples/prometheus/alertmanager.yml")
	if err != nil {
		t.Fatal(err)
	}
	base := startAlertmanagerWith(t, string(yml))
	now := time.Now().UTC()
	alert := func(source, check string) map[string]any {
		return map[string]any{"labels": map[string]string{"alertname": "VigilCheckDown", "rule": "down", "severity": "page",
			"check": check, "target": "origin-a", "source": source},
			"startsAt": now.Format(time.RFC3339), "endsAt": now.Add(5 * time.Minute).Format(time.RFC3339)}
	}
	body, _ := json.Marshal([]map[string]any{alert("vigil", "asset"), alert("prometheus", "asset"), alert("prometheus", "healthz")})
	resp, err := http.Post(base+"/api/v2/alerts", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v2/alerts: %d", resp.StatusCode)
	}
	want := map[string]string{"vigil/asset": "active", "prometheus/asset": "suppressed", "prometheus/healthz": "active"}
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := map[string]string{}
		for _, a := range getAlerts(t, base) {
			st := a.Status.State
			if st == "suppressed" && len(a.Status.InhibitedBy) == 0 {
				st = "suppressed, not inhibited"
			}
			got[a.Labels["source"]+"/"+a.Labels["check"]] = st
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("alert states %v, want %v", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
