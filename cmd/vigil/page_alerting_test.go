package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// Alert receivers that fail and echo what they were sent (a 500 with the
// request line, the Authorization header and the body) show on the status
// page (no login), /healthz and the log with their status and host, but
// without a secret of their config: ${…} values (a header's token, an
// Alertmanager password or path), a webhook URL's path and query token,
// the Basic credentials Go makes of a URL's userinfo.
func TestAlertReceiverErrorsHideSecrets(t *testing.T) {
	env := map[string]string{"PGAL_HOOK_HDR": "HookHdrSecret", "PGAL_AMPW": "EnvAmPassword77",
		"PGAL_TENANT": "EnvTenant31"}
	for k, v := range env {
		t.Setenv(k, v)
	}
	var logs checktest.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	echoed := make(chan string, 64)
	echo := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		msg := fmt.Sprintf("%s %s auth=%s body=%s", r.Method, r.RequestURI, r.Header.Get("Authorization"), b)
		select {
		case echoed <- msg:
		default:
		}
		http.Error(w, msg, http.StatusInternalServerError)
	})}
	echoLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go echo.Serve(echoLn)
	defer echo.Close()
	echoAddr := echoLn.Addr().String()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close() // nothing listens there: the check fails, the alert fires

	a := startBadApp(t, fmt.Sprintf(`
agent: {region: r1, data_dir: %s}
defaults: {interval: 300ms, timeout: 250ms, rise: 1, fall: 1, jitter: "0%%"}
targets: [{name: gone, url: "http://%s/"}]
checks: [{name: api, targets: [gone], http: {path: /}}]
alerting:
  evaluation_interval: 1s
  down: {for: 1s}
  retry: {attempts: 1, timeout: 1s}
  receivers:
    - name: hook
      webhook:
        url: "http://%s/hook/T0KENPATH?token=WebhookTok777"
        headers: {authorization: "Bearer ${PGAL_HOOK_HDR}"}
    - name: am
      alertmanager: {url: "http://amuser:${PGAL_AMPW}@%s/${PGAL_TENANT}/"}
`, t.TempDir(), closedAddr, echoAddr, echoAddr), logger, nil)
	defer a.stop()

	var health string
	waitFor(t, 20*time.Second, "both receivers failing on /healthz", func() bool {
		_, health = do(t, "GET", a.base+"/healthz", "", nil)
		return strings.Contains(health, "alert receiver hook failing") && strings.Contains(health, "alert receiver am failing")
	})
	_, page := do(t, "GET", a.base+"/", "", nil)

	basic := base64.StdEncoding.EncodeToString([]byte("amuser:EnvAmPassword77"))
	var all strings.Builder
	for len(echoed) > 0 {
		all.WriteString(<-echoed + "\n")
	}
	for _, s := range []string{"HookHdrSecret", "T0KENPATH", "WebhookTok777", basic, "EnvTenant31"} {
		if !strings.Contains(all.String(), s) {
			t.Fatalf("the receiver never echoed %q, the test proves nothing:\n%s", s, all.String())
		}
	}
	secrets := []string{"HookHdrSecret", "EnvAmPassword77", "EnvTenant31", "T0KENPATH", "WebhookTok777", basic}
	for what, text := range map[string]string{"GET /": page, "GET /healthz": health} {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows %q:\n%s", what, s, text)
			}
		}
		for _, want := range []string{"http://" + echoAddr + "/…: status 500", "http://" + echoAddr + "/***/api/v2/alerts: status 500"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q:\n%s", what, want, text)
			}
		}
	}
	a.stop()
	// The log has the alerter's errors with the receivers' secrets hidden
	// at the source and the config's ${NAME} values by the app.
	log := logs.String()
	for _, s := range []string{"HookHdrSecret", "EnvAmPassword77", "EnvTenant31", "T0KENPATH", "WebhookTok777", basic} {
		if strings.Contains(log, s) {
			t.Errorf("log shows %q:\n%s", s, log)
		}
	}
	if !strings.Contains(log, "alerting: delivery failed") {
		t.Errorf("no delivery failure logged:\n%s", log)
	}
}
