package alerting

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/tlsclient"
)

// Notifier delivers one notification to one destination. It returns a
// *PermanentError for failures a retry cannot fix (a 4xx other than 429).
type Notifier interface {
	Notify(ctx context.Context, n Notification) error
}

// PermanentError marks a delivery failure that is not retried.
type PermanentError struct{ Err error }

// Error returns the wrapped error's text.
func (e *PermanentError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *PermanentError) Unwrap() error { return e.Err }

// queueSize bounds each receiver's queue; beyond it deliveries are dropped
// and counted (result="dropped").
const queueSize = 64

// Delivery results, the `result` label of vigil_alert_notifications_total.
const (
	ResultSuccess = "success"
	ResultRetry   = "retry"
	ResultFailure = "failure"
	ResultDropped = "dropped"
)

// closeGrace bounds the final delivery attempts on close: in-flight and
// queued deliveries get one attempt each within min(retry.timeout,
// closeGrace) in all, so a failing receiver cannot hold up shutdown.
const closeGrace = 2 * time.Second

// resultFunc learns the outcome of every delivery queued with an id:
// ok when the receiver accepted it, false when it failed for good, was
// dropped, or was still undelivered at shutdown. It runs on the receiver's
// worker (or the caller of sendTo for a drop) and must not call into the
// dispatcher.
type resultFunc func(receiver string, n Notification, id uint64, ok bool)

// prepareFunc runs on the receiver's worker just before a delivery queued
// with an id is attempted: it returns the notification to send, which may
// leave out resolved alerts no longer to be sent, and false when nothing
// is left to say (the delivery is then skipped and no result reported).
// It must not call into the dispatcher.
type prepareFunc func(receiver string, n Notification, id uint64) (Notification, bool)

// delivery is one queued notification and the id its result is reported
// under.
type delivery struct {
	n  Notification
	id uint64
}

// dispatcher owns one worker per receiver.
type dispatcher struct {
	log     *slog.Logger
	metrics *metrics
	retry   RetryConfig
	resolve time.Duration
	workers []*worker
	result  resultFunc  // nil: results are not reported
	prepare prepareFunc // nil: every delivery is sent as queued
	// redact is Options.Redact, applied to every delivery error shown;
	// nil: none.
	redact func(string) string
	// flog logs failed deliveries, rate-limited per receiver.
	flog *deliveryLog
	// ctx bounds every request; it is cancelled when close's final
	// attempts run out of time.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// closing is closed when close starts: backoff waits end, failed
	// deliveries are no longer retried.
	closing chan struct{}

	mu      sync.Mutex
	cond    *sync.Cond
	closed  bool // close started; enqueue drops. Guarded by mu.
	pending int
}

// failState is a receiver's delivery failure, as DeliveryFailures reports
// it, and its deliveries queued or in flight. A reload that leaves the
// receiver's delivery settings as they were (sameDelivery) hands it to
// the new dispatcher's worker: the new worker and the old one, still
// draining, share it, so the reload neither clears a failure nor loses
// the result of a delivery it cut across. A receiver whose settings
// changed gets a new one. Its fields are guarded by mu, taken after any
// dispatcher's mu.
type failState struct {
	mu      sync.Mutex
	failing bool
	err     string // the last failure's error, redacted
	// rejected: the last failure was a *PermanentError (the receiver
	// refused what it was sent).
	rejected bool
	// pending counts the receiver's deliveries queued or in flight, on
	// every worker sharing it.
	pending int
}

type worker struct {
	name   string
	n      Notifier
	sev    map[string]bool // empty: all
	checks []string        // names or globs; empty: all
	tiers  map[string]bool // empty: all
	rules  map[string]bool // empty: all
	stream bool            // Alertmanager: gets every active alert each evaluation
	q      chan delivery
	// conf is the receiver's config, to tell at a reload whether its
	// delivery settings changed (sameDelivery).
	conf Receiver
	// fail is its delivery failure, shared with the worker it took over
	// from at a reload when the settings are the same.
	fail *failState

	// Notifications not delivered after close started, logged once when
	// the worker stops. Touched only by the worker's goroutine.
	lost, lostResolved int
	lostErr            string
}

// newDispatcher starts one worker per receiver of cfg. flog logs their
// failed deliveries; nil: a log of its own on the real clock. prev is the
// dispatcher a reload replaces (nil: none): a receiver of the same name
// and the same delivery settings (sameDelivery) keeps its failure state.
func newDispatcher(cfg Config, client *http.Client, log *slog.Logger, m *metrics, result resultFunc,
	prepare prepareFunc, redact func(string) string, flog *deliveryLog, prev *dispatcher) *dispatcher {
	if flog == nil {
		flog = newDeliveryLog(nil)
	}
	d := &dispatcher{log: log, metrics: m, retry: cfg.Retry, resolve: cfg.ResolveTimeout,
		result: result, prepare: prepare, redact: redact, flog: flog}
	d.cond = sync.NewCond(&d.mu)
	d.closing = make(chan struct{})
	d.ctx, d.cancel = context.WithCancel(context.Background())
	for _, r := range cfg.Receivers {
		w := &worker{name: r.Name, sev: map[string]bool{}, checks: r.Checks, tiers: map[string]bool{},
			rules: map[string]bool{}, q: make(chan delivery, queueSize), conf: r, fail: &failState{}}
		if prev != nil {
			if pw := prev.worker(r.Name); pw != nil && sameDelivery(pw.conf, r) {
				w.fail = pw.fail
			}
		}
		for _, rule := range r.Rules {
			w.rules[rule] = true
		}
		for _, s := range r.Severities {
			w.sev[s] = true
		}
		for _, t := range r.Tiers {
			w.tiers[t] = true
		}
		client := receiverClient(client, &r.TLS)
		switch {
		case r.Webhook != nil:
			w.n = newWebhook(*r.Webhook, client)
		case r.Slack != nil:
			w.n = newSlack(*r.Slack, client)
		case r.PagerDuty != nil:
			w.n = newPagerDuty(*r.PagerDuty, client)
		case r.Alertmanager != nil:
			w.n = newAlertmanager(*r.Alertmanager, client, cfg.ResolveTimeout)
			w.stream = true
		}
		m.precreate(r.Name)
		d.workers = append(d.workers, w)
		d.wg.Add(1)
		go d.loop(w)
	}
	return d
}

// receiverClient is client with the receiver's tls settings, when it has
// any: a copy whose transport is a clone of client's (or of Go's default
// transport) with that TLS config. A client whose transport is not an
// *http.Transport (a test's) is used as is.
func receiverClient(client *http.Client, tc *tlsclient.Config) *http.Client {
	conf := tc.TLSConfig()
	if conf == nil {
		return client
	}
	rt := client.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	base, ok := rt.(*http.Transport)
	if !ok {
		return client
	}
	tr := base.Clone()
	tr.TLSClientConfig = conf
	c := *client
	c.Transport = tr
	return &c
}

// route is what a receiver's filters (severities, checks, tiers, rules)
// look at: an alert's, or a notification group's, rule, check, severity
// and tier.
type route struct{ rule, check, severity, tier string }

// takes reports whether the worker receives alerts routed as rt: each of
// its filters is empty or matches.
func (w *worker) takes(rt route) bool {
	if len(w.sev) > 0 && !w.sev[rt.severity] {
		return false
	}
	if len(w.tiers) > 0 && !w.tiers[rt.tier] {
		return false
	}
	if len(w.rules) > 0 && !w.rules[rt.rule] {
		return false
	}
	return len(w.checks) == 0 || slices.ContainsFunc(w.checks, func(p string) bool { return matchCheck(p, rt.check) })
}

// worker returns the receiver named name, nil if there is none.
func (d *dispatcher) worker(name string) *worker {
	for _, w := range d.workers {
		if w.name == name {
			return w
		}
	}
	return nil
}

// sendTo queues n for receiver w; its result is reported under id. It
// returns false, after counting the drop, when the queue is full or close
// started; the result function is then not called.
func (d *dispatcher) sendTo(w *worker, n Notification, id uint64) bool {
	return d.enqueue(w, delivery{n: n, id: id})
}

func (d *dispatcher) enqueue(w *worker, x delivery) bool {
	d.mu.Lock()
	if d.closed { // nobody would deliver it
		d.mu.Unlock()
		d.metrics.notifications.WithLabelValues(w.name, ResultDropped).Inc()
		return false
	}
	d.pending++
	w.addPending(1)
	select {
	case w.q <- x:
		d.mu.Unlock()
		return true
	default:
		d.pending--
		w.addPending(-1)
		if d.pending == 0 {
			d.cond.Broadcast()
		}
		d.mu.Unlock()
		d.metrics.notifications.WithLabelValues(w.name, ResultDropped).Inc()
		d.log.Warn("alerting: receiver queue full, notification dropped", "receiver", w.name, "group", x.n.GroupKey)
		return false
	}
}

// prepared returns x as it is to be sent, and false when it is not to be
// sent at all (see prepareFunc).
func (d *dispatcher) prepared(w *worker, x delivery) (_ delivery, send bool) {
	if d.prepare == nil || x.id == 0 {
		return x, true
	}
	defer func() {
		if r := recover(); r != nil {
			send = true
			d.log.Error("alerting: panic preparing a delivery", "receiver", w.name, "panic", r,
				"stack", string(debug.Stack()))
		}
	}()
	n, send := d.prepare(w.name, x.n, x.id)
	x.n = n
	return x, send
}

// report passes a delivery's outcome to the result function.
func (d *dispatcher) report(w *worker, x delivery, ok bool) {
	if d.result == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			d.log.Error("alerting: panic recording a delivery result", "receiver", w.name, "panic", r,
				"stack", string(debug.Stack()))
		}
	}()
	d.result(w.name, x.n, x.id, ok)
}

// done counts one delivery to w as finished, after its result was
// reported.
func (d *dispatcher) done(w *worker) {
	d.mu.Lock()
	d.pending--
	w.addPending(-1)
	if d.pending == 0 {
		d.cond.Broadcast()
	}
	d.mu.Unlock()
}

func (d *dispatcher) isClosing() bool {
	select {
	case <-d.closing:
		return true
	default:
		return false
	}
}

func (d *dispatcher) loop(w *worker) {
	defer d.wg.Done()
	for {
		select {
		case <-d.closing:
			d.finish(w)
			return
		case x := <-w.q:
			if x, send := d.prepared(w, x); send {
				if x, ok, sent := d.deliver(w, x); sent {
					d.report(w, x, ok)
				}
			}
			d.done(w)
		}
	}
}

// finish runs once close started: every queued notification gets one
// attempt while d.ctx lasts and is dropped after; what was not delivered
// is logged in one line.
func (d *dispatcher) finish(w *worker) {
	for {
		select {
		case x := <-w.q:
			x, send := d.prepared(w, x)
			if !send {
				d.done(w)
				continue
			}
			ok := false
			if d.ctx.Err() != nil {
				d.metrics.notifications.WithLabelValues(w.name, ResultDropped).Inc()
				w.undelivered(x.n, "shutdown deadline passed before an attempt")
			} else {
				// Closing: one attempt, no retry to prepare.
				x, ok, _ = d.deliver(w, x)
			}
			d.report(w, x, ok)
			d.done(w)
		default:
			if w.lost > 0 {
				d.log.Warn("alerting: notifications not delivered at shutdown", "receiver", w.name,
					"count", w.lost, "resolved", w.lostResolved, "last_err", w.lostErr)
			}
			return
		}
	}
}

func (w *worker) undelivered(n Notification, err string) {
	w.lost++
	if n.Status == StatusResolved || len(n.Resolved) > 0 {
		w.lostResolved++
	}
	w.lostErr = err
}

// deliver tries one prepared delivery up to retry.attempts times with
// doubling backoff, preparing it again (see prepareFunc) before each
// retry: what was silenced while it waited is left out, and it stops,
// with sent false (no result to report), when nothing is left to say.
// Once close started it makes no further retry: a delivery waiting for
// its next try gets one final attempt at once, and a failure is counted
// for finish's log line rather than logged. It returns the delivery as
// last attempted and whether the receiver accepted it.
func (d *dispatcher) deliver(w *worker, in delivery) (x delivery, ok, sent bool) {
	x = in
	defer func() {
		if r := recover(); r != nil {
			ok, sent = false, true
			d.log.Error("alerting: panic in delivery", "receiver", w.name, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	backoff := d.retry.Backoff
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			var send bool
			if x, send = d.prepared(w, x); !send {
				return x, false, false
			}
		}
		n := x.n
		ctx, cancel := context.WithTimeout(d.ctx, d.retry.Timeout)
		err := w.n.Notify(ctx, n)
		cancel()
		if err == nil {
			d.metrics.notifications.WithLabelValues(w.name, ResultSuccess).Inc()
			w.fail.mu.Lock()
			w.fail.failing, w.fail.err, w.fail.rejected = false, "", false
			w.fail.mu.Unlock()
			d.flog.record(d.log, w.name, "")
			return x, true, true
		}
		var perm *PermanentError
		closing := d.isClosing()
		// The receiver hid its own secrets (see newEndpoint); msg is what
		// every consumer shows.
		msg := err.Error()
		if d.redact != nil {
			msg = d.redact(msg)
		}
		rejected := errors.As(err, &perm)
		if closing || attempt >= d.retry.Attempts || rejected {
			d.metrics.notifications.WithLabelValues(w.name, ResultFailure).Inc()
			w.fail.mu.Lock()
			w.fail.failing, w.fail.err, w.fail.rejected = true, msg, rejected
			w.fail.mu.Unlock()
			if closing {
				w.undelivered(n, msg)
				return x, false, true
			}
			d.flog.record(d.log, w.name, msg, "group", n.GroupKey, "status", n.Status, "attempts", attempt)
			return x, false, true
		}
		d.metrics.notifications.WithLabelValues(w.name, ResultRetry).Inc()
		d.log.Debug("alerting: delivery failed, retrying", "receiver", w.name, "attempt", attempt,
			"backoff", backoff, "err", msg)
		t := time.NewTimer(backoff)
		select {
		case <-d.closing:
			t.Stop()
		case <-t.C:
		}
		backoff = min(2*backoff, d.retry.MaxBackoff)
	}
}

// addPending counts n more (or fewer) deliveries to w queued or in
// flight.
func (w *worker) addPending(n int) {
	w.fail.mu.Lock()
	w.fail.pending += n
	w.fail.mu.Unlock()
}

// failure returns w's delivery failure; false when it has none.
func (w *worker) failure() (string, bool) {
	w.fail.mu.Lock()
	defer w.fail.mu.Unlock()
	return w.fail.err, w.fail.failing
}

// clearFailure forgets receiver w's delivery failure when nothing is
// queued for it or in flight (a delivery's failure is recorded and its
// result reported before it stops counting as in flight; deliveries still
// draining on the worker a reload replaced count too), and returns the
// error it had; false when it had none, a delivery to it is not finished,
// or its last failure was a rejection (a *PermanentError: a 4xx other
// than 429, a redirect), which waiting does not fix and which the next
// notification would meet too. For a receiver that is owed nothing (see
// Alerter.clearUnowed).
func (d *dispatcher) clearFailure(w *worker) (string, bool) {
	f := w.fail
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.failing || f.pending > 0 || f.rejected {
		return "", false
	}
	msg := f.err
	f.failing, f.err = false, ""
	return msg, true
}

func (d *dispatcher) failures() map[string]string {
	out := map[string]string{}
	for _, w := range d.workers {
		if msg, ok := w.failure(); ok {
			out[w.name] = msg
		}
	}
	return out
}

// sameDelivery reports whether receivers r and s (of the same name) are
// delivered to the same way: the same kind with the same settings (URL,
// headers, routing key, channel) and the same tls settings, the contents
// of its CA and client-certificate files included. Filters (severities,
// checks, tiers, rules) do not count: they change what it is sent, not
// whether it can be reached.
func sameDelivery(r, s Receiver) bool {
	if r.Name != s.Name || !sameTLS(&r.TLS, &s.TLS) {
		return false
	}
	switch {
	case r.Webhook != nil || s.Webhook != nil:
		return r.Webhook != nil && s.Webhook != nil && r.Webhook.URL == s.Webhook.URL &&
			maps.Equal(r.Webhook.Headers, s.Webhook.Headers)
	case r.Slack != nil || s.Slack != nil:
		return r.Slack != nil && s.Slack != nil && *r.Slack == *s.Slack
	case r.PagerDuty != nil || s.PagerDuty != nil:
		return r.PagerDuty != nil && s.PagerDuty != nil && *r.PagerDuty == *s.PagerDuty
	case r.Alertmanager != nil || s.Alertmanager != nil:
		return r.Alertmanager != nil && s.Alertmanager != nil && *r.Alertmanager == *s.Alertmanager
	}
	return true
}

// destination is a fingerprint of where receiver r's notifications go:
// its kind and URL, with a PagerDuty receiver's routing key (which names
// the service) and a Slack receiver's channel. Headers and tls settings
// do not count: they change how the same destination is reached. Two
// receivers of the same name and another destination are two audiences:
// what one was sent, the other was not (Alerter.forgetReceiver). It is
// "sha256:" and the hex SHA-256 of those values, never the values
// themselves, so the state file can keep it without the secrets; "" for a
// receiver of no kind.
func destination(r Receiver) string {
	var parts []string
	switch {
	case r.Webhook != nil:
		parts = []string{"webhook", string(r.Webhook.URL)}
	case r.Slack != nil:
		parts = []string{"slack", string(r.Slack.URL), r.Slack.Channel}
	case r.PagerDuty != nil:
		parts = []string{"pagerduty", r.PagerDuty.URL, string(r.PagerDuty.RoutingKey)}
	case r.Alertmanager != nil:
		parts = []string{"alertmanager", r.Alertmanager.URL}
	default:
		return ""
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// sameTLS reports whether a and b configure the same https client: the
// same keys, CA pool and client certificate (as read at load or reload,
// so a certificate file rewritten in place is a change).
func sameTLS(a, b *tlsclient.Config) bool {
	if a.CAFile != b.CAFile || a.ServerName != b.ServerName || a.CertFile != b.CertFile ||
		a.KeyFile != b.KeyFile || a.InsecureSkipVerify != b.InsecureSkipVerify {
		return false
	}
	ca, cb := a.TLSConfig(), b.TLSConfig()
	if ca == nil || cb == nil {
		return ca == nil && cb == nil
	}
	if ca.VerifyConnection != nil || cb.VerifyConnection != nil {
		return false // a config that failed to load: not known to be the same
	}
	if (ca.RootCAs == nil) != (cb.RootCAs == nil) || (ca.RootCAs != nil && !ca.RootCAs.Equal(cb.RootCAs)) {
		return false
	}
	return slices.EqualFunc(clientCert(ca), clientCert(cb), bytes.Equal)
}

// clientCert is the DER chain of c's client certificate; nil for none.
func clientCert(c *tls.Config) [][]byte {
	if c.GetClientCertificate == nil {
		return nil
	}
	cert, err := c.GetClientCertificate(&tls.CertificateRequestInfo{})
	if err != nil || cert == nil {
		return nil
	}
	return cert.Certificate
}

// flush waits for pending deliveries to reach zero or ctx to end.
func (d *dispatcher) flush(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		d.mu.Lock()
		d.cond.Broadcast()
		d.mu.Unlock()
	})
	defer stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.pending > 0 {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d.cond.Wait()
	}
	return nil
}

// close stops the workers within min(retry.timeout, closeGrace), sooner
// when ctx ends: retries and backoff waits stop at once, every in-flight
// or queued delivery gets one final attempt while that deadline lasts, and
// each receiver logs in one line how many notifications it could not
// deliver. It returns ctx's error if ctx ended first, an error with the
// count if some were not delivered, else nil. Calling it again waits for
// the first call's workers.
func (d *dispatcher) close(ctx context.Context) error {
	d.mu.Lock()
	first := !d.closed
	d.closed = true
	d.mu.Unlock()
	if first {
		close(d.closing)
	}
	grace := time.AfterFunc(min(d.retry.Timeout, closeGrace), d.cancel)
	defer grace.Stop()
	stop := context.AfterFunc(ctx, d.cancel)
	defer stop()
	d.wg.Wait()
	d.cancel()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("alerting: close: %w", err)
	}
	lost := 0
	for _, w := range d.workers {
		lost += w.lost
	}
	if lost > 0 && first {
		return fmt.Errorf("alerting: close: %s not delivered", pluralN(lost, "notification"))
	}
	return nil
}

// drain waits for the queued deliveries, with their full retries, until
// ctx ends, then closes. For a dispatcher replaced by a reload, whose
// receivers may still be healthy.
func (d *dispatcher) drain(ctx context.Context) error {
	err := d.flush(ctx)
	if cerr := d.close(ctx); err == nil {
		err = cerr
	}
	return err
}
