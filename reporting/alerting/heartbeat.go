package alerting

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// HeartbeatConfig is alerting.heartbeat: a dead man's switch for the
// alerter itself, an external service (healthchecks.io, Dead Man's Snitch,
// a push check of another vigil agent) that alerts when the pings stop.
// After each successful evaluation, at most every Interval, the alerter
// requests URL; while evaluations fail it requests FailURL instead (at
// most every Interval), or nothing when FailURL is empty, so the service
// alerts on the missing pings. A killed alerter pings nothing.
type HeartbeatConfig struct {
	// URL is requested after successful evaluations. Empty: no heartbeat.
	// Secret: a ping URL usually is its own credential.
	URL Secret `mapstructure:"url"`
	// FailURL is requested while evaluations fail (healthchecks.io's
	// <url>/fail). Optional; needs URL. Secret.
	FailURL Secret `mapstructure:"fail_url"`
	// Interval is the least time between two pings of one kind. Default 1m.
	Interval time.Duration `mapstructure:"interval"`
	// Method is GET (default) or POST (an empty body).
	Method string `mapstructure:"method"`
	// Headers are added to every ping (e.g. Authorization). Secrets.
	Headers map[string]Secret `mapstructure:"headers"`
	// Timeout bounds each ping. Default 10s.
	Timeout time.Duration `mapstructure:"timeout"`
}

// validate sets the defaults; key paths are relative to `alerting`.
func (h *HeartbeatConfig) validate() error {
	var errs []error
	if h.URL == "" {
		if h.FailURL != "" {
			errs = append(errs, fmt.Errorf("heartbeat.url: %w (heartbeat.fail_url is set)", ErrRequired))
		}
		return errors.Join(errs...)
	}
	errs = append(errs, checkURL("heartbeat.url", string(h.URL), true))
	if h.FailURL != "" {
		errs = append(errs, checkURL("heartbeat.fail_url", string(h.FailURL), true))
	}
	if h.Interval < 0 {
		errs = append(errs, fmt.Errorf("heartbeat.interval: %s: %w", h.Interval, ErrNotPositive))
	}
	if h.Interval == 0 {
		h.Interval = time.Minute
	}
	if h.Timeout < 0 {
		errs = append(errs, fmt.Errorf("heartbeat.timeout: %s: %w", h.Timeout, ErrNotPositive))
	}
	if h.Timeout == 0 {
		h.Timeout = 10 * time.Second
	}
	switch strings.ToUpper(h.Method) {
	case "":
		h.Method = http.MethodGet
	case http.MethodGet, http.MethodPost:
		h.Method = strings.ToUpper(h.Method)
	default:
		errs = append(errs, fmt.Errorf("heartbeat.method: %q: want GET or POST", h.Method))
	}
	return errors.Join(errs...)
}

// heartbeatState is when the last ping of each kind went out.
type heartbeatState struct {
	mu       sync.Mutex
	last     time.Time
	kind     string // "ok" or "fail"
	inflight bool
}

// beat pings the heartbeat after an evaluation that ended with evalErr,
// in the background (an evaluation never waits for it).
func (a *Alerter) beat(evalErr error) {
	a.mu.Lock()
	hb, closed := a.cfg.Heartbeat, a.closed
	a.mu.Unlock()
	if hb.URL == "" || closed {
		return
	}
	target, kind := string(hb.URL), "ok"
	if evalErr != nil {
		if hb.FailURL == "" {
			return
		}
		target, kind = string(hb.FailURL), "fail"
	}
	now := a.now()
	s := &a.hb
	s.mu.Lock()
	if s.inflight || (s.kind == kind && !s.last.IsZero() && now.Sub(s.last) < hb.Interval) {
		s.mu.Unlock()
		return
	}
	s.inflight, s.last, s.kind = true, now, kind
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			s.inflight = false
			s.mu.Unlock()
		}()
		if err := a.ping(hb, target); err != nil {
			// The URL and headers are secrets: the host alone.
			host := ""
			if u, perr := url.Parse(target); perr == nil {
				host = u.Host
			}
			a.log.Warn("alerting: heartbeat ping failed", "kind", kind, "host", host, "error", err)
		}
	}()
}

// ping sends one heartbeat request; its error never shows the URL.
func (a *Alerter) ping(hb HeartbeatConfig, target string) error {
	ctx, cancel := context.WithTimeout(context.Background(), hb.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, hb.Method, target, nil)
	if err != nil {
		return errors.New("bad heartbeat url")
	}
	req.Header.Set("User-Agent", "vigil-alerter")
	for k, v := range hb.Headers {
		req.Header.Set(k, string(v))
	}
	resp, err := a.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return fmt.Errorf("%s: %w", ue.Op, ue.Err)
		}
		return errors.New("request failed")
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}
