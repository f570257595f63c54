package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/canary"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/proxy"
	"github.com/vigil-synthetics/vigil/reporting"
)

// scenarioOrigins are the three origins behind one system under test;
// index 1 (origin-b) is the one a fault hits.
type scenarioOrigins [3]*checktest.Origin

var scenarioOriginNames = [3]string{"origin-a", "origin-b", "origin-c"}

func startScenarioOrigins() (scenarioOrigins, error) {
	var set scenarioOrigins
	for i := range set {
		o, err := checktest.StartOrigin(nil)
		if err != nil {
			set.close()
			return scenarioOrigins{}, err
		}
		set[i] = o
	}
	return set, nil
}

func (set scenarioOrigins) close() {
	for _, o := range set {
		if o != nil {
			o.Close()
		}
	}
}

// relay is a TCP relay to one address that can be cut: while cut, open
// connections are closed and new ones are accepted and closed at once, so
// whoever dials through it sees the target as broken (a network partition
// between one vantage point and one origin).
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func startRelay(target string) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

func (r *relay) URL() string { return "http://" + r.ln.Addr().String() }

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		if r.cut {
			r.mu.Unlock()
			c.Close()
			continue
		}
		r.conns[c] = struct{}{}
		r.mu.Unlock()
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.drop(c)
			up, err := net.DialTimeout("tcp", r.target, time.Second)
			if err != nil {
				return
			}
			r.mu.Lock()
			if r.cut {
				r.mu.Unlock()
				up.Close()
				return
			}
			r.conns[up] = struct{}{}
			r.mu.Unlock()
			defer r.drop(up)
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
			<-done
		}()
	}
}

func (r *relay) drop(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.Close()
}

// setCut cuts (true) or heals (false) the relay.
func (r *relay) setCut(cut bool) {
	r.mu.Lock()
	r.cut = cut
	var open []net.Conn
	if cut {
		for c := range r.conns {
			open = append(open, c)
		}
	}
	r.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
}

func (r *relay) close() {
	r.setCut(true)
	r.ln.Close()
	r.wg.Wait()
}

// scenarioTiming holds the intervals of one suite run.
type scenarioTiming struct {
	interval    time.Duration // every canary check
	verdictPoll time.Duration
	fall, rise  int
	pre, fault  time.Duration // healthy load before the fault; the fault window
	post        time.Duration // load after the fault ends
	rate        float64       // client requests per second per system
}

// vigilConfig is the scenario config of one region. b is origin-b's URL as
// this region reaches it.
func vigilConfig(dir, region string, o scenarioOrigins, bURL string, tm scenarioTiming) string {
	return fmt.Sprintf(`agent: {region: %s, vantage: scenario, data_dir: %s}
defaults: {interval: %s, timeout: 800ms, rise: %d, fall: %d}
targets:
  - {name: origin-a, url: %s}
  - {name: origin-b, url: %s}
  - {name: origin-c, url: %s}
checks:
  - name: healthz
    tier: shallow
    targets: [origin-a, origin-b, origin-c]
    http: {path: /healthz}
    expect: {status: 200}
  - name: asset
    tier: deep
    targets: [origin-a, origin-b, origin-c]
    http: {path: /asset.bin, cache_bust: true}
    expect:
      status: 200
      headers: {Access-Control-Allow-Origin: present}
      checksum: "sha256:%s"
  - name: api
    tier: deep
    targets: [origin-a, origin-b, origin-c]
    http: {path: /api/status}
    expect: {status: 200, json: [{path: ok, equals: true}]}
proxy:
  listen: 127.0.0.1:0
  verdict_poll: %s
  signal_window: 2s
  pools:
    - name: web
      hosts: ["*"]
      policy: round_robin
      origins: [{target: origin-a}, {target: origin-b}, {target: origin-c}]
      verdicts: {checks: [healthz, asset, api], quorum: 2, max_age: 10s}
      passive: {consecutive_5xx: 5, failure_rate: 10%%, window: 5s, min_requests: 10, latency_p95: 1s, ejection: 5s}
      max_ejected: 67%%
      retry: {tries: 3, try_timeout: 1500ms, budget: 4s}
      connect_timeout: 300ms
      slow_start: 2s
`, region, dir, tm.interval, tm.rise, tm.fall, o[0].URL(), bURL, o[2].URL(), checktest.AssetSHA256(), tm.verdictPoll)
}

// vigilSystem is vigil under test: the proxy and the region-1 canary in one
// app reading verdicts from the embedded store, and a region-2 canary
// publishing into the same store that reaches origin-b through a relay.
type vigilSystem struct {
	app     *app
	relay   *relay
	origins scenarioOrigins
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	errs    chan error
}

func startVigilSystem(dir string, o scenarioOrigins, tm scenarioTiming) (*vigilSystem, error) {
	r, err := startRelay(o[1].Addr())
	if err != nil {
		return nil, err
	}
	v := &vigilSystem{relay: r, origins: o, errs: make(chan error, 4)}
	p1, p2 := filepath.Join(dir, "r1.yaml"), filepath.Join(dir, "r2.yaml")
	if err := os.WriteFile(p1, []byte(vigilConfig(dir, "r1", o, o[1].URL(), tm)), 0o600); err != nil {
		r.close()
		return nil, err
	}
	if err := os.WriteFile(p2, []byte(vigilConfig(dir, "r2", o, r.URL(), tm)), 0o600); err != nil {
		r.close()
		return nil, err
	}
	cfg, err := loadConfig(p1, os.LookupEnv)
	if err != nil {
		r.close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.close()
		return nil, err
	}
	a, err := newApp(cfg, appOptions{roles: roles{canary: true, proxy: true}, proxyFromStore: true,
		listener: ln, log: discardLogger()})
	if err != nil {
		ln.Close()
		r.close()
		return nil, err
	}
	v.app = a
	rcfg, err := loadConfig(p2, os.LookupEnv)
	if err != nil {
		a.close(context.Background())
		ln.Close()
		r.close()
		return nil, err
	}
	pairs, err := rcfg.Compile(canary.CompileOptions{Version: version, Browser: a.browser})
	if err == nil {
		var c *canary.Canary
		c, err = canary.New(&rcfg.Config, pairs, canary.Options{Sink: a.fan, Registry: prometheus.NewRegistry(), Log: discardLogger()})
		if err == nil {
			ctx, cancel := context.WithCancel(context.Background())
			v.cancel = cancel
			v.wg.Add(2)
			go func() {
				defer v.wg.Done()
				if err := c.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
					v.errs <- fmt.Errorf("canary r2: %w", err)
				}
			}()
			go func() {
				defer v.wg.Done()
				if err := a.Run(ctx); err != nil {
					v.errs <- err
				}
			}()
		}
	}
	if err != nil {
		a.close(context.Background())
		ln.Close()
		r.close()
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for v.proxyURL() == "" {
		if time.Now().After(deadline) {
			v.stop()
			return nil, errors.New("vigil proxy did not listen within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return v, nil
}

func (v *vigilSystem) proxyURL() string {
	for _, a := range v.app.prx.Addrs() {
		return "http://" + a.String()
	}
	return ""
}

// originB is origin-b's state in the proxy.
func (v *vigilSystem) originB() (proxy.OriginStatus, bool) {
	for _, s := range v.app.prx.Origins() {
		if s.Target == "origin-b" {
			return s, true
		}
	}
	return proxy.OriginStatus{}, false
}

// regionsHealthy counts the regions whose stored verdict of check × target
// is healthy, and returns the state each region holds.
func (v *vigilSystem) verdictStates(check, target string) map[string]reporting.State {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out := map[string]reporting.State{}
	vs, err := v.app.local.Verdicts(ctx, 0)
	if err != nil {
		return out
	}
	for _, x := range vs {
		if x.Check == check && x.Target == target {
			out[x.Region] = x.State
		}
	}
	return out
}

func (v *vigilSystem) stop() error {
	if v.cancel != nil {
		v.cancel()
	}
	v.wg.Wait()
	v.relay.close()
	close(v.errs)
	var errs []error
	for err := range v.errs {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
