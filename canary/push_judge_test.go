package canary

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
)

// slowPushConfig is a config with the push check "backup" of period 1h,
// judged every hour (so that no scheduled judgement comes during a test:
// see quiet), rise as given, fall 1 and max_runtime as given, whose state
// lives in dir.
func slowPushConfig(t *testing.T, dir string, rise int, maxRuntime time.Duration) *Config {
	t.Helper()
	cfg := testConfig(t, nil, CheckConfig{Name: "backup", Rise: rise, Fall: 1, Interval: time.Hour,
		Push: &PushSpec{Period: time.Hour, Grace: 5 * time.Minute, Token: pushToken, MaxRuntime: maxRuntime}})
	cfg.Agent.DataDir = dir
	return cfg
}

// quiet waits, if backup's next scheduled judgement comes within d, until
// it has come, so that the test's judgements are the pings' own.
func (a *pushAgent) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	a.c.mu.Lock()
	next := a.c.byName[[2]string{"backup", "backup"}].next
	a.c.mu.Unlock()
	if wait := time.Until(next); wait < d {
		t.Logf("waiting %s for backup's scheduled judgement", wait.Round(time.Millisecond))
		time.Sleep(wait + 200*time.Millisecond)
	}
}

// waitWithin polls cond every 10 ms for at most d.
func waitWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// failed puts backup in push_failed: a fail ping, and a judgement of it
// (Trigger) in case the ping's own has not come yet.
func (a *pushAgent) failed(t *testing.T) time.Time {
	t.Helper()
	at := time.Now()
	if code, body := a.ping(t, "POST", "/api/v1/push/backup/fail", bearer); code != 200 {
		t.Fatalf("fail ping: %d %s", code, body)
	}
	if _, err := a.c.Trigger("backup", "backup"); err != nil {
		t.Fatal(err)
	}
	if v, _ := a.latest(); v.State != reporting.StateUnhealthy || v.Cause != string(checks.CausePushFailed) {
		t.Fatalf("after a fail ping: %s %s", v.State, v.Cause)
	}
	return at
}

// checksTotal is vigil_checks_total of backup by result, from /metrics.
func (a *pushAgent) checksTotal(t *testing.T, result string) string {
	t.Helper()
	_, m := do(t, "GET", a.srv.URL+"/metrics", "", "")
	pre := `vigil_checks_total{check="backup",region="test-region",result="` + result + `",target="backup"} `
	for _, l := range strings.Split(m, "\n") {
		if strings.HasPrefix(l, pre) {
			return strings.TrimPrefix(l, pre)
		}
	}
	return "absent"
}

// A ping is judged at once, through the pair's normal run: a check judged
// every hour leaves push_failed within about a second of a success ping,
// as the store (the API) and the metrics see it, and a fail ping turns a
// healthy check unhealthy as fast.
func TestPushPingJudgedAtOnce(t *testing.T) {
	a := startPushAgent(t, slowPushConfig(t, t.TempDir(), 1, 0))
	a.quiet(t, 30*time.Second)
	failedAt := a.failed(t)
	// The ping judgements of a check are at least a second apart.
	time.Sleep(time.Until(failedAt.Add(pingJudgeGap + 50*time.Millisecond)))
	if code, body := a.ping(t, "GET", "/api/v1/push/backup", bearer); code != 200 {
		t.Fatalf("ping: %d %s", code, body)
	}
	waitWithin(t, time.Second, "healthy in /api/v1/verdicts after a success ping", func() bool {
		v := a.stored(t)
		return v.State == reporting.StateHealthy && v.OK
	})
	if got := a.checksTotal(t, "pass"); got != "1" {
		t.Fatalf("vigil_checks_total{result=pass} %s, want 1 (the ping's judgement)", got)
	}
	time.Sleep(pingJudgeGap)
	if code, body := a.ping(t, "POST", "/api/v1/push/backup?status=fail&msg=disk+full", bearer); code != 200 {
		t.Fatalf("fail ping: %d %s", code, body)
	}
	waitWithin(t, time.Second, "unhealthy after a fail ping", func() bool {
		v := a.stored(t)
		return v.State == reporting.StateUnhealthy && strings.HasSuffix(v.Err, ": disk full")
	})
}

// A burst of pings is not a burst of runs: with rise 2, success pings in a
// row are one judgement (they do not change what it says after the first),
// so the failed check is not healthy until a second judgement.
func TestPushPingBurstIsOneJudgement(t *testing.T) {
	a := startPushAgent(t, slowPushConfig(t, t.TempDir(), 2, 0))
	a.quiet(t, 30*time.Second)
	failedAt := a.failed(t)
	// 25 pings over 2.5 s, longer than the least gap between two ping
	// judgements.
	for i := 0; i < 25; i++ {
		if code, body := a.ping(t, "POST", "/api/v1/push/backup", bearer); code != 200 {
			t.Fatalf("ping %d: %d %s", i, code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Until(failedAt.Add(3*pingJudgeGap + 200*time.Millisecond)))
	if v, _ := a.latest(); !v.OK || v.State != reporting.StateUnhealthy || v.Streak != 1 {
		t.Fatalf("after a burst of success pings with rise 2: ok %v, %s, streak %d; want unhealthy after one pass", v.OK, v.State, v.Streak)
	}
	if got := a.checksTotal(t, "pass"); got != "1" {
		t.Fatalf("vigil_checks_total{result=pass} %s after 25 pings, want 1", got)
	}
	// The next judgement (here an on-demand one) is the second pass.
	if v, err := a.c.Trigger("backup", "backup"); err != nil || v.State != reporting.StateHealthy {
		t.Fatalf("second pass: %s %v", v.State, err)
	}
}

// pingAnswer is a ping's 200 answer.
type pingAnswer struct {
	Status    string    `json:"status"`
	RunTimeMs *float64  `json:"run_time_ms"`
	FinishBy  time.Time `json:"finish_by"`
}

func (a *pushAgent) pingJSON(t *testing.T, method, path string) pingAnswer {
	t.Helper()
	code, body := a.ping(t, method, path, bearer)
	if code != 200 {
		t.Fatalf("%s %s: %d %s", method, path, code, body)
	}
	var ans pingAnswer
	if method == "HEAD" {
		return ans
	}
	if err := json.Unmarshal([]byte(body), &ans); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return ans
}

// /start, then a success ping: the run that judges the ping reports the
// job's run time as its duration and TTFB (in the API's verdicts and
// history), once; a start without a finish within max_runtime fails the
// check, at the limit.
func TestPushStartRunTime(t *testing.T) {
	a := startPushAgent(t, slowPushConfig(t, t.TempDir(), 1, 2*time.Second))
	a.quiet(t, 30*time.Second)
	started := time.Now()
	ans := a.pingJSON(t, "POST", "/api/v1/push/backup/start")
	if ans.Status != "start" || ans.RunTimeMs != nil {
		t.Fatalf("start answer %+v", ans)
	}
	if d := ans.FinishBy.Sub(started); d < time.Second || d > 3*time.Second {
		t.Fatalf("finish_by %s, %s after the start, want max_runtime 2s", ans.FinishBy, d)
	}
	time.Sleep(400 * time.Millisecond)
	ans = a.pingJSON(t, "GET", "/api/v1/push/backup")
	ran := time.Since(started)
	if ans.Status != "ok" || ans.RunTimeMs == nil || *ans.RunTimeMs < 400 || *ans.RunTimeMs > float64(ran.Milliseconds()+1) {
		t.Fatalf("finish answer %+v, want run_time_ms 400 to %d", ans, ran.Milliseconds())
	}
	want := reporting.FromMs(*ans.RunTimeMs)
	waitWithin(t, time.Second, "the finished run's judgement in /api/v1/verdicts", func() bool {
		v := a.stored(t)
		return v.OK && v.Duration == want
	})
	if v := a.stored(t); v.TTFB != want || v.State != reporting.StateHealthy {
		t.Fatalf("verdict %+v: ttfb %s, want the run time %s", v, v.TTFB, want)
	}
	// The next judgement has no run time: one sample per job run.
	if v, err := a.c.Trigger("backup", "backup"); err != nil || v.Duration != 0 || v.TTFB != 0 {
		t.Fatalf("next judgement: duration %s ttfb %s %v, want none", v.Duration, v.TTFB, err)
	}
	waitFor(t, "two judgements in the history", func() bool {
		code, body := do(t, "GET", a.srv.URL+"/api/v1/checks/backup/history?target=backup", "", "")
		var vs []reporting.Verdict
		if code != 200 || json.Unmarshal([]byte(body), &vs) != nil || len(vs) < 2 {
			return false
		}
		n := 0
		for _, v := range vs {
			if v.Duration == want && v.TTFB == want {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("history: %d runs with the job's run time, want 1: %s", n, body)
		}
		return true
	})

	// A start and no finish: unhealthy just after max_runtime, although
	// the check is judged every hour and its deadline is an hour away.
	time.Sleep(pingJudgeGap)
	started = time.Now()
	a.pingJSON(t, "HEAD", "/api/v1/push/backup/start")
	if v := a.stored(t); v.State != reporting.StateHealthy {
		t.Fatalf("a start judged: %s %s", v.State, v.Err)
	}
	var v reporting.Verdict
	waitWithin(t, 4*time.Second, "unhealthy past max_runtime", func() bool {
		v = a.stored(t)
		return v.State == reporting.StateUnhealthy
	})
	if late := v.At.Sub(started); late < 2*time.Second || late > 3*time.Second {
		t.Fatalf("unhealthy %s after the start, want just after max_runtime 2s", late)
	}
	st, _ := a.c.push.get("backup")
	wantErr := "started at " + st.Started.UTC().Format(time.RFC3339) + ", no finish within max_runtime 2s"
	if v.Cause != string(checks.CausePushMissing) || v.Err != wantErr {
		t.Fatalf("overdue: cause %q err %q, want push_missing %q", v.Cause, v.Err, wantErr)
	}
	// The finish ends it, at once, with the run time.
	time.Sleep(pingJudgeGap)
	ans = a.pingJSON(t, "POST", "/api/v1/push/backup")
	if ans.RunTimeMs == nil || *ans.RunTimeMs < 2000 {
		t.Fatalf("late finish: %+v", ans)
	}
	waitWithin(t, time.Second, "healthy after the late finish", func() bool {
		v := a.stored(t)
		return v.State == reporting.StateHealthy && v.Duration == reporting.FromMs(*ans.RunTimeMs)
	})
	// A start has no status.
	if code, body := a.ping(t, "POST", "/api/v1/push/backup/start?status=ok", bearer); code != 400 || !strings.Contains(body, "a /start ping has no status") {
		t.Fatalf("/start?status=ok: %d %s", code, body)
	}
	st, _ = a.c.push.get("backup")
	_, metrics := do(t, "GET", a.srv.URL+"/metrics", "", "")
	for _, want := range []string{
		`vigil_push_received_total{check="backup",status="start"} 2`,
		`vigil_push_last_run_duration_seconds{check="backup"} ` + strconv.FormatFloat(st.RunTime.Seconds(), 'g', -1, 64),
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// Start pings do not move the period's deadline: a job that starts and
// never finishes is push_missing at its deadline (without max_runtime).
func TestPushStartKeepsDeadline(t *testing.T) {
	a := startPushAgent(t, pushConfig(t, t.TempDir()))
	if code, body := a.ping(t, "POST", "/api/v1/push/backup", bearer); code != 200 {
		t.Fatalf("ping: %d %s", code, body)
	}
	pinged, _ := a.c.push.get("backup")
	for i := 0; i < 8; i++ { // 4 s: past period + grace (3 s)
		if code, body := a.ping(t, "POST", "/api/v1/push/backup/start", bearer); code != 200 {
			t.Fatalf("start: %d %s", code, body)
		}
		time.Sleep(500 * time.Millisecond)
	}
	v, _ := a.latest()
	want := "no push since " + pinged.LastOK.UTC().Format(time.RFC3339) + " (period 2s, grace 1s)"
	if v.State != reporting.StateUnhealthy || v.Err != want {
		t.Fatalf("starts only: %s %q, want unhealthy %q", v.State, v.Err, want)
	}
}

// A start survives a restart: the finish after it reports the run time
// from the start before the restart.
func TestPushStartSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	a := startPushAgent(t, slowPushConfig(t, dir, 1, time.Hour))
	started := time.Now()
	a.pingJSON(t, "GET", "/api/v1/push/backup/start")
	a.stop()
	raw, err := os.ReadFile(filepath.Join(dir, PushStateFile))
	if err != nil || !strings.Contains(string(raw), `"started"`) {
		t.Fatalf("%s: %s %v", PushStateFile, raw, err)
	}
	time.Sleep(300 * time.Millisecond)
	b := startPushAgent(t, slowPushConfig(t, dir, 1, time.Hour))
	ans := b.pingJSON(t, "POST", "/api/v1/push/backup")
	ran := time.Since(started)
	if ans.RunTimeMs == nil || *ans.RunTimeMs < 300 || *ans.RunTimeMs > float64(ran.Milliseconds()+1) {
		t.Fatalf("finish after a restart: %+v, want run_time_ms 300 to %d", ans, ran.Milliseconds())
	}
	waitWithin(t, time.Second, "the run time in the restarted agent's verdict", func() bool {
		v := b.stored(t)
		return v.OK && v.Duration == reporting.FromMs(*ans.RunTimeMs)
	})
}

// A fail ping while the check already fails for a fail ping is judged at
// once too: the verdict says the new ping's message (and counts a failed
// run) within a second, not at the next scheduled judgement an hour
// later; a burst of fail pings is still at most one judgement a second.
func TestPushFailPingWhileFailing(t *testing.T) {
	a := startPushAgent(t, slowPushConfig(t, t.TempDir(), 1, 0))
	a.quiet(t, 30*time.Second)
	failedAt := a.failed(t)
	fails := func() int {
		t.Helper()
		n, err := strconv.Atoi(a.checksTotal(t, "fail"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The first fail ping's own judgement may come after failed's
	// Trigger: counted once the gap after it has passed.
	time.Sleep(time.Until(failedAt.Add(pingJudgeGap + 50*time.Millisecond)))
	before := fails()
	if code, body := a.ping(t, "POST", "/api/v1/push/backup/fail?msg=second+failure", bearer); code != 200 {
		t.Fatalf("second fail ping: %d %s", code, body)
	}
	waitWithin(t, time.Second, "the second fail ping's message in /api/v1/verdicts", func() bool {
		v := a.stored(t)
		return v.State == reporting.StateUnhealthy && strings.HasSuffix(v.Err, ": second failure")
	})
	if got := fails() - before; got != 1 {
		t.Fatalf("vigil_checks_total{result=fail} rose by %d after the second fail ping, want 1", got)
	}
	// Five fail pings in 200 ms: one judgement at once, one at the end of
	// the gap, which reads the last ping.
	time.Sleep(pingJudgeGap)
	for i := 1; i <= 5; i++ {
		if code, body := a.ping(t, "POST", "/api/v1/push/backup/fail?msg=burst+"+strconv.Itoa(i), bearer); code != 200 {
			t.Fatalf("fail ping %d: %d %s", i, code, body)
		}
		time.Sleep(40 * time.Millisecond)
	}
	waitWithin(t, 2*pingJudgeGap, "the burst's last message in /api/v1/verdicts", func() bool {
		return strings.HasSuffix(a.stored(t).Err, ": burst 5")
	})
	time.Sleep(pingJudgeGap)
	if got := fails() - before; got != 3 {
		t.Fatalf("vigil_checks_total{result=fail} rose by %d after a burst of 5 fail pings, want 2 more (2 judgements)", got-1)
	}
}

// Without max_runtime, a start older than period + grace is not the start
// of the run a finish ends (a run that crashed without a finish long
// ago): the finish reports no run time, and its judgement no duration. A
// recent start still does.
func TestPushStaleStartMeasuresNothing(t *testing.T) {
	cfg := testConfig(t, nil, CheckConfig{Name: "backup", Rise: 1, Fall: 1, Interval: time.Second,
		Push: &PushSpec{Period: time.Second, Grace: time.Second, Token: pushToken}})
	cfg.Agent.DataDir = t.TempDir()
	a := startPushAgent(t, cfg)
	a.pingJSON(t, "POST", "/api/v1/push/backup/start")
	time.Sleep(2200 * time.Millisecond) // past period + grace (2s)
	if ans := a.pingJSON(t, "POST", "/api/v1/push/backup"); ans.Status != "ok" || ans.RunTimeMs != nil {
		t.Fatalf("finish 2.2s after a start, period 1s and grace 1s: %+v, want no run_time_ms", ans)
	}
	if st, _ := a.c.push.get("backup"); st.RunTime != 0 || st.RunUnjudged || !st.Started.IsZero() {
		t.Fatalf("state after a finish with a stale start: %+v", st)
	}
	time.Sleep(pingJudgeGap)
	a.pingJSON(t, "POST", "/api/v1/push/backup/start")
	time.Sleep(300 * time.Millisecond)
	if ans := a.pingJSON(t, "POST", "/api/v1/push/backup"); ans.RunTimeMs == nil || *ans.RunTimeMs < 300 || *ans.RunTimeMs > 1000 {
		t.Fatalf("finish 0.3s after a start: %+v, want run_time_ms about 300", ans)
	}
}
