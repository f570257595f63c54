package alerting

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/reporting"
)

// echoReceiver is a local receiver that answers every request with status
// and a body echoing what it got (method, request URI, the Authorization
// and X-Api-Key headers, the body), as a careless receiver's error page
// does.
type echoReceiver struct {
	srv    *httptest.Server
	status int
	mu     sync.Mutex
	uris   []string // request URI of each request
	echoes []string
}

func newEchoReceiver(t *testing.T, status int) *echoReceiver {
	e := &echoReceiver{status: status}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		echo := fmt.Sprintf("%s %s auth=%s key=%s body=%s", req.Method, req.RequestURI,
			req.Header.Get("Authorization"), req.Header.Get("X-Api-Key"), b)
		e.mu.Lock()
		e.uris = append(e.uris, req.RequestURI)
		e.echoes = append(e.echoes, echo)
		e.mu.Unlock()
		w.WriteHeader(e.status)
		_, _ = io.WriteString(w, echo)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *echoReceiver) host() string { return e.srv.Listener.Addr().String() }

func (e *echoReceiver) requests() (uris, echoes []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.uris...), append([]string(nil), e.echoes...)
}

// deliveryRig is an Alerter over the given receivers whose down rule fires
// on the second evaluation, with its log kept.
type deliveryRig struct {
	clock *fakeClock
	store *memStore
	a     *Alerter
	logs  *strings.Builder
}

func newDeliveryRig(t *testing.T, rcvs []Receiver, o Options) *deliveryRig {
	t.Helper()
	r := &deliveryRig{clock: &fakeClock{t: t0}, logs: &strings.Builder{}}
	r.store = &memStore{clock: r.clock.Now}
	cfg := Config{Down: DownRule{For: time.Second}, Receivers: rcvs,
		Retry: RetryConfig{Attempts: 3, Backoff: 5 * time.Millisecond}}
	o.Now, o.Registry = r.clock.Now, prometheus.NewRegistry()
	o.Log = slog.New(slog.NewTextHandler(lockedWriter{r.logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := New(cfg, nil, r.store, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	r.a = a
	return r
}

// fire makes the down alert of asset/origin-a fire and waits for its
// deliveries.
func (r *deliveryRig) fire(t *testing.T) {
	t.Helper()
	for range 2 { // pending, then firing (down.for 1s)
		now := r.clock.Add(15 * time.Second)
		r.store.add(verdict("asset", "origin-a", "eu", now.Add(-time.Second), reporting.StateUnhealthy, 15*time.Second))
		if err := r.a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := r.a.Flush(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func (r *deliveryRig) logText() string {
	logMu <- struct{}{}
	defer func() { <-logMu }()
	return r.logs.String()
}

// A receiver that fails echoes what it was sent; neither the log nor
// DeliveryFailures (the status page, /healthz) may then show a secret of
// the receiver's config: URL tokens, userinfo, query values, header
// values, the routing key, or their base64 in a Basic Authorization.
func TestDeliveryErrorsHideSecrets(t *testing.T) {
	echo := newEchoReceiver(t, http.StatusInternalServerError)
	host := echo.host()
	r := newDeliveryRig(t, []Receiver{
		{Name: "hook", Webhook: &WebhookConfig{URL: Secret("http://" + host + "/hook/T0KENPATH?token=WebhookTok777"),
			Headers: map[string]Secret{"authorization": "Bearer HookHdrSecret", "x-api-key": "HookApiKey4242"}}},
		{Name: "chat", Slack: &SlackConfig{URL: Secret("http://" + host + "/services/T0AAA/B0BBB/SlackTok8888")}},
		{Name: "am", Alertmanager: &AlertmanagerConfig{URL: "http://amuser:EnvAmPassword77@" + host + "/"}},
		{Name: "amq", Alertmanager: &AlertmanagerConfig{URL: "http://" + host + "/am?apikey=AmQueryKey55"}},
		{Name: "pd", PagerDuty: &PagerDutyConfig{RoutingKey: "PdRoutingKey999",
			URL: "http://pduser:PdPass4321@" + host + "/v2/enqueue?tenant=PdQueryTok1"}},
	}, Options{})
	r.fire(t)

	b64 := base64.StdEncoding.EncodeToString
	echoed := []string{"T0KENPATH", "WebhookTok777", "HookHdrSecret", "HookApiKey4242", "SlackTok8888",
		b64([]byte("amuser:EnvAmPassword77")), "AmQueryKey55", "PdRoutingKey999", b64([]byte("pduser:PdPass4321")),
		"PdQueryTok1"}
	_, echoes := echo.requests()
	all := strings.Join(echoes, "\n")
	for _, s := range echoed {
		if !strings.Contains(all, s) {
			t.Fatalf("the receiver never echoed %q, the test proves nothing:\n%s", s, all)
		}
	}
	secrets := append(echoed, "EnvAmPassword77", "PdPass4321") // sent as Basic credentials

	fails := r.a.DeliveryFailures()
	logs := r.logText()
	t.Logf("DeliveryFailures: %q", fails)
	for _, s := range secrets {
		for rcv, f := range fails {
			if strings.Contains(f, s) {
				t.Errorf("DeliveryFailures[%s] shows %q: %s", rcv, s, f)
			}
		}
		if strings.Contains(logs, s) {
			t.Errorf("log shows %q:\n%s", s, logs)
		}
	}
	// What stays: the status, the host, the path of a URL that is not a
	// secret, the query's keys.
	for rcv, want := range map[string]string{
		"hook": "POST http://" + host + "/…: status 500: POST ",
		"chat": "POST http://" + host + "/…: status 500: POST ",
		"am":   "POST http://" + host + "/api/v2/alerts: status 500: POST /api/v2/alerts auth=Basic ***",
		"amq":  "POST http://" + host + "/am/api/v2/alerts?apikey=…: status 500: POST /am/api/v2/alerts?apikey=*** ",
		"pd":   "POST http://" + host + "/v2/enqueue?tenant=…: status 500: POST /v2/enqueue?tenant=*** auth=Basic *** ",
	} {
		if !strings.HasPrefix(fails[rcv], want) {
			t.Errorf("DeliveryFailures[%s] = %q, want it to start %q", rcv, fails[rcv], want)
		}
		if !strings.Contains(logs, "receiver="+rcv) {
			t.Errorf("no delivery failure logged for %s:\n%s", rcv, logs)
		}
	}
	if f := fails["pd"]; !strings.Contains(f, `"routing_key":"***"`) {
		t.Errorf("DeliveryFailures[pd] = %q, want the echoed routing key hidden in place", f)
	}
}

// The Alertmanager path is joined to the URL's path; a query stays the
// query.
func TestAlertmanagerURLJoin(t *testing.T) {
	echo := newEchoReceiver(t, http.StatusOK)
	host := echo.host()
	r := newDeliveryRig(t, []Receiver{
		{Name: "root-query", Alertmanager: &AlertmanagerConfig{URL: "http://" + host + "/?apikey=K1"}},
		{Name: "prefix-query", Alertmanager: &AlertmanagerConfig{URL: "http://" + host + "/am/?apikey=K2&x=y"}},
		{Name: "prefix", Alertmanager: &AlertmanagerConfig{URL: "http://" + host + "/am2/"}},
	}, Options{})
	r.fire(t)
	uris, _ := echo.requests()
	got := map[string]bool{}
	for _, u := range uris {
		got[u] = true
	}
	for _, want := range []string{"/api/v2/alerts?apikey=K1", "/am/api/v2/alerts?apikey=K2&x=y", "/am2/api/v2/alerts"} {
		if !got[want] {
			t.Errorf("no request to %s; got %q", want, uris)
		}
	}
	if f := r.a.DeliveryFailures(); len(f) != 0 {
		t.Errorf("DeliveryFailures = %v", f)
	}
}

// A receiver that redirects is a misconfiguration: the redirect is not
// followed (a webhook's headers would go to the other host), and the
// delivery fails at once naming where the receiver pointed.
func TestReceiverRedirectNotFollowed(t *testing.T) {
	for name, client := range map[string]*http.Client{"default client": nil, "caller's client": {Timeout: 5 * time.Second}} {
		t.Run(name, func(t *testing.T) {
			elsewhere := newEchoReceiver(t, http.StatusOK)
			var hits sync.Map
			redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				n, _ := hits.LoadOrStore("n", new(int))
				*n.(*int)++ // one worker: requests are sequential
				http.Redirect(w, req, "http://"+elsewhere.host()+"/collect?from=vigil", http.StatusTemporaryRedirect)
			}))
			t.Cleanup(redir.Close)
			r := newDeliveryRig(t, []Receiver{{Name: "hook", Webhook: &WebhookConfig{URL: Secret(redir.URL + "/hook/RedirTok"),
				Headers: map[string]Secret{"x-api-key": "RedirApiKey66"}}}}, Options{HTTPClient: client})
			r.fire(t)

			if uris, echoes := elsewhere.requests(); len(uris) != 0 {
				t.Fatalf("the redirect was followed: the other host got %q", echoes)
			}
			n, _ := hits.Load("n")
			if n == nil || *n.(*int) != 1 {
				t.Errorf("receiver asked %v times, want once (a redirect is not retried)", n)
			}
			f := r.a.DeliveryFailures()["hook"]
			want := "POST http://" + redir.Listener.Addr().String() + "/…: status 307: redirected to " + elsewhere.host() +
				" (alert deliveries do not follow redirects: set the receiver's URL to where it should post)"
			if f != want {
				t.Errorf("DeliveryFailures[hook] = %q\nwant %q", f, want)
			}
			if logs := r.logText(); !strings.Contains(logs, "redirected to "+elsewhere.host()) {
				t.Errorf("log does not name the redirect:\n%s", logs)
			}
		})
	}
}

// Options.Redact hides what the alerter cannot know is secret (a ${NAME}
// value in an Alertmanager URL's path) in the log and DeliveryFailures.
func TestDeliveryErrorsOptionsRedact(t *testing.T) {
	echo := newEchoReceiver(t, http.StatusInternalServerError)
	r := newDeliveryRig(t, []Receiver{{Name: "am", Alertmanager: &AlertmanagerConfig{URL: "http://" + echo.host() + "/tenant-EnvTenant31/"}}},
		Options{Redact: strings.NewReplacer("EnvTenant31", "***").Replace})
	r.fire(t)
	f := r.a.DeliveryFailures()["am"]
	want := "POST http://" + echo.host() + "/tenant-***/api/v2/alerts: status 500: POST /tenant-***/api/v2/alerts "
	if !strings.HasPrefix(f, want) {
		t.Errorf("DeliveryFailures[am] = %q, want it to start %q", f, want)
	}
	if logs := r.logText(); strings.Contains(logs, "EnvTenant31") || !strings.Contains(logs, "receiver=am") {
		t.Errorf("log shows the value or no failure:\n%s", logs)
	}
}
