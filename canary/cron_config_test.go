package canary

import (
	"strings"
	"testing"
	"time"
)

// cronCheck validates a config with one cron check on a dead local port
// and returns the resolved check and the validation error.
func cronCheck(t *testing.T, ch CheckConfig) (CheckConfig, error) {
	t.Helper()
	ch.Name, ch.Targets = "c", []string{"a"}
	cfg := Config{Targets: []TargetConfig{{Name: "a", URL: "http://127.0.0.1:1"}}, Checks: []CheckConfig{ch}}
	err := cfg.ValidateAndSetDefaults()
	return cfg.Checks[0], err
}

// TestCronDefaultsFromLongestGap: a cron check's interval, and so its
// default timeout and expire_after, come from the longest gap between its
// runs, whenever the config is loaded. "0,1 * * * * *" fires at :00 and :01
// of every minute: the gap after :01 is 59 s. Before, the interval was the
// gap between the next two firings at load time (1 s for a load at any
// second but :00), so expire_after was 3 s and the verdict read unknown for
// most of every minute.
func TestCronDefaultsFromLongestGap(t *testing.T) {
	for _, tc := range []struct {
		cron                        string
		interval, timeout, expireAt time.Duration
	}{
		{"0,1 * * * * *", 59 * time.Second, 10 * time.Second, 177 * time.Second},
		{"0,10 * * * * *", 50 * time.Second, 10 * time.Second, 150 * time.Second},
		{"*/5 * * * * *", 5 * time.Second, 4 * time.Second, 15 * time.Second},
		{"0 9 * * 1,3", 5 * 24 * time.Hour, 10 * time.Second, 15 * 24 * time.Hour},
	} {
		ch, err := cronCheck(t, CheckConfig{Cron: tc.cron})
		if err != nil {
			t.Fatalf("%q: %v", tc.cron, err)
		}
		if ch.Interval != tc.interval || ch.Timeout != tc.timeout || ch.ExpireAfter != tc.expireAt {
			t.Errorf("%q: interval %s, timeout %s, expire_after %s; want %s, %s, %s", tc.cron,
				ch.Interval, ch.Timeout, ch.ExpireAfter, tc.interval, tc.timeout, tc.expireAt)
		}
	}
}

// TestCronExpireAfterMessage: a too-short expire_after on a cron check is
// rejected with the longest gap, and the message's "omit it" advice names
// the default it would get, which fits (it said "3 × interval", the 30 s
// the same error rejected when loaded at the wrong second).
func TestCronExpireAfterMessage(t *testing.T) {
	_, err := cronCheck(t, CheckConfig{Cron: "0,10 * * * * *", ExpireAfter: 30 * time.Second})
	want := "checks[0].expire_after: 30s is shorter than the longest gap between cron runs 50s + jitter 0s + timeout 10s = 1m0s: " +
		"the verdict would expire before the next run renews it and the pair would stay unknown (set at least 1m0s, or omit it for 3 × the longest gap = 2m30s)"
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}

// TestCronRejectsSchedulesThatDoNotRunAsWritten: "@every" below 1 s (or not
// whole seconds) would run every second, and a schedule that never
// matches would leave the pair unknown for ever: both are errors naming
// checks[N].cron. Whole seconds and a leap day stay valid.
func TestCronRejectsSchedulesThatDoNotRunAsWritten(t *testing.T) {
	for spec, want := range map[string]string{
		"@every 500ms":                       `checks[0].cron: "@every 500ms": bad cron schedule: @every needs a whole number of seconds, at least 1s (it would run every 1s)`,
		"@every 0s":                          `checks[0].cron: "@every 0s": bad cron schedule: @every needs a whole number of seconds, at least 1s (it would run every 1s)`,
		"CRON_TZ=Europe/Paris @every 1500ms": `checks[0].cron: "CRON_TZ=Europe/Paris @every 1500ms": bad cron schedule: @every needs a whole number of seconds, at least 1s (it would run every 1s)`,
		"0 0 30 2 *":                         `checks[0].cron: "0 0 30 2 *": bad cron schedule: it matches no time in the next 5 years, so the check would never run`,
		"@every 1s":                          "",
		"@every 2m":                          "",
		"0 0 29 2 *":                         "",
	} {
		_, err := cronCheck(t, CheckConfig{Cron: spec})
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v, want valid", spec, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: got %v\nwant %s", spec, err, want)
		}
	}
}
