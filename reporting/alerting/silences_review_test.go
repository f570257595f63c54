package alerting

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/store"
)

// silenceAPI is an alerter over the embedded store with its state in a
// temporary directory, configured with check asset (origin-a, origin-b),
// live_errors alerting at once, and its silences API served over HTTP.
type silenceAPI struct {
	t     *testing.T
	a     *Alerter
	st    *store.Store
	clock *fakeClock
	dir   string
	srv   *httptest.Server
	logs  *bytes.Buffer
}

const silenceToken = "admin-token-0123456789"

func newSilenceAPI(t *testing.T, dir string) *silenceAPI {
	t.Helper()
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(t.TempDir(), store.Options{Now: clock.Now, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	logs := &bytes.Buffer{}
	a, err := New(Config{DeadMan: DeadManRule{Disabled: true}, LiveErrors: LiveErrorsRule{For: time.Nanosecond}}, nil, st,
		Options{Now: clock.Now, StatePath: filepath.Join(dir, "alerts.json"), Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	a.SetChecks([]string{"asset", "multi"})
	a.SetPairs(map[string][]string{"asset": {"origin-a", "origin-b"}, "multi": {"origin-a"}})
	srv := httptest.NewServer(a.SilencesHandler(func() string { return silenceToken }))
	t.Cleanup(srv.Close)
	return &silenceAPI{t: t, a: a, st: st, clock: clock, dir: dir, srv: srv, logs: logs}
}

func (s *silenceAPI) do(method, path, body string) (int, string) {
	s.t.Helper()
	return silenceCall(s.t, s.srv.URL, method, path, body, true)
}

func (s *silenceAPI) post(body string) (int, string) {
	s.t.Helper()
	return s.do("POST", "/api/v1/silences", body)
}

// TestSilenceUnknownSubject: a silence of a check or target that does not
// exist would silence nothing while the on-call believes the page is
// silenced, so it is refused with 400 naming the field and value, with a
// did-you-mean for a typo. A configured check, one of its targets, and a
// proxy pool × origin that a live_errors alert names are taken (201), with
// blanks around them trimmed.
func TestSilenceUnknownSubject(t *testing.T) {
	s := newSilenceAPI(t, t.TempDir())
	ctx := context.Background()
	sigs := liveSignals("web", "sg-b", s.clock.Now(), 20, 50, func(int) int { return 25 }, nil)
	if err := s.st.PublishSignals(ctx, sigs); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.a.Evaluate(ctx); err != nil {
			t.Fatal(err)
		}
		s.clock.Add(time.Second)
	}
	if _, ok := liveAlerts(s.a)["web/sg-b"]; !ok {
		t.Fatalf("want a live_errors alert for web/sg-b, got %v", liveAlerts(s.a))
	}
	for _, c := range []struct{ body, want string }{
		{`{"check":"mutli","for":"1h","by":"al","why":"x"}`, `check: \"mutli\": not a configured check, proxy pool nor the check of an active alert (did you mean \"multi\"?)`},
		{`{"check":"  ","for":"1h","by":"al","why":"x"}`, `check: required`},
		{`{"check":"asset","target":"origin-c","for":"1h","by":"al","why":"x"}`, `target: \"origin-c\": not a target of check \"asset\" nor of its active alerts`},
		{`{"check":"multi","target":"origin-b","for":"1h","by":"al","why":"x"}`, `target: \"origin-b\": not a target of check \"multi\"`},
		{`{"check":"asset","target":"orgin-a","for":"1h","by":"al","why":"x"}`, `(did you mean \"origin-a\"?)`},
		{`{"check":"web","target":"sg-c","for":"1h","by":"al","why":"x"}`, `target: \"sg-c\": not a target of check \"web\"`},
	} {
		if code, body := s.post(c.body); code != http.StatusBadRequest || !strings.Contains(body, c.want) {
			t.Errorf("POST %s: %d %s, want 400 with %s", c.body, code, body, c.want)
		}
	}
	for _, body := range []string{
		`{"check":" asset ","target":" origin-b","for":"1h","by":"al","why":"x"}`,
		`{"check":"multi","for":"1h","by":"al","why":"x"}`,
		`{"check":"web","target":"sg-b","for":"1h","by":"al","why":"pool web"}`,
		`{"check":"web","for":"1h","by":"al","why":"pool web"}`,
	} {
		if code, out := s.post(body); code != http.StatusCreated {
			t.Errorf("POST %s: %d %s, want 201", body, code, out)
		}
	}
	var trimmed bool
	for _, x := range s.a.Silences() {
		trimmed = trimmed || x.Check == "asset" && x.Target == "origin-b"
	}
	if !trimmed {
		t.Errorf("silences %+v: want asset/origin-b trimmed", s.a.Silences())
	}
	if al := liveAlerts(s.a)["web/sg-b"]; al.Silenced == "" {
		t.Errorf("the live_errors alert of web/sg-b is not silenced")
	}
}

// TestSilenceListEmpty: GET with no silence in force lists [], not null.
func TestSilenceListEmpty(t *testing.T) {
	s := newSilenceAPI(t, t.TempDir())
	if code, body := s.do("GET", "/api/v1/silences", ""); code != http.StatusOK || body != "[]" {
		t.Fatalf("GET with none: %d %s, want 200 []", code, body)
	}
	if code, body := s.post(`{"check":"asset","for":"1h","by":"al","why":"x"}`); code != http.StatusCreated {
		t.Fatalf("POST: %d %s", code, body)
	}
	s.clock.Add(time.Hour)
	if code, body := s.do("GET", "/api/v1/silences", ""); code != http.StatusOK || body != "[]" {
		t.Fatalf("GET after the silence ended: %d %s, want 200 []", code, body)
	}
}

// TestSilenceForDays: "for" reads days as config durations do ("1d",
// "1d12h"), up to the 7d limit its error names.
func TestSilenceForDays(t *testing.T) {
	s := newSilenceAPI(t, t.TempDir())
	for _, c := range []struct {
		for_ string
		want time.Duration
	}{{"1d", 24 * time.Hour}, {"1d12h", 36 * time.Hour}, {"7d", 7 * 24 * time.Hour}} {
		code, body := s.post(`{"check":"asset","for":"` + c.for_ + `","by":"al","why":"x"}`)
		var got Silence
		if code != http.StatusCreated || json.Unmarshal([]byte(body), &got) != nil || got.EndsAt.Sub(got.StartsAt) != c.want {
			t.Errorf("POST for %s: %d %s, want 201 and a silence of %s", c.for_, code, body, c.want)
		}
	}
	if code, body := s.post(`{"check":"asset","for":"8d","by":"al","why":"x"}`); code != http.StatusBadRequest ||
		!strings.Contains(body, `for: \"8d\": must be above 0 and at most 7d`) {
		t.Errorf("POST for 8d: %d %s", code, body)
	}
	if code, body := s.post(`{"check":"asset","for":"1x","by":"al","why":"x"}`); code != http.StatusBadRequest ||
		!strings.Contains(body, `for: \"1x\": not a duration`) {
		t.Errorf("POST for 1x: %d %s", code, body)
	}
}

// TestSilenceDeleteEnded: DELETE of a silence that already ended is 404,
// as for an unknown id, and logs no "silence ended".
func TestSilenceDeleteEnded(t *testing.T) {
	s := newSilenceAPI(t, t.TempDir())
	code, body := s.post(`{"check":"asset","for":"1h","by":"al","why":"x"}`)
	var sil Silence
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &sil) != nil {
		t.Fatalf("POST: %d %s", code, body)
	}
	s.clock.Add(time.Hour + time.Second)
	s.logs.Reset()
	if code, body := s.do("DELETE", "/api/v1/silences/"+sil.ID, ""); code != http.StatusNotFound ||
		!strings.Contains(body, "no silence "+sil.ID) {
		t.Fatalf("DELETE of an ended silence: %d %s, want 404", code, body)
	}
	if strings.Contains(s.logs.String(), "silence ended") {
		t.Fatalf("DELETE of an ended silence logged: %s", s.logs.String())
	}
	if code, _ := s.do("DELETE", "/api/v1/silences/0123abcd", ""); code != http.StatusNotFound {
		t.Fatalf("DELETE of an unknown id: %d, want 404", code)
	}
}

// TestSilencesFileUnreadable: a silences.json that cannot be read is
// logged naming it and moved aside to silences.json.bad, so the next
// silence added does not overwrite what it held.
func TestSilencesFileUnreadable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "silences.json")
	junk := []byte(`[{"id":"ab12","check":"asset","ends_at":"2026-12-0`)
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	s := newSilenceAPI(t, dir)
	if l := s.logs.String(); !strings.Contains(l, path) || !strings.Contains(l, path+".bad") {
		t.Fatalf("log does not name the file and where it went: %s", l)
	}
	if code, body := s.post(`{"check":"asset","for":"1h","by":"al","why":"x"}`); code != http.StatusCreated {
		t.Fatalf("POST: %d %s", code, body)
	}
	if b, err := os.ReadFile(path + ".bad"); err != nil || !bytes.Equal(b, junk) {
		t.Fatalf("%s.bad: %q, %v; want the unreadable file", path, b, err)
	}
}
