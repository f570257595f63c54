package reporting

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Duplicate canaries. A verdict's series is check × target × region ×
// vantage: two canaries started with the same agent.region and
// agent.vantage (a copied config, a second replica of a Deployment) write
// the same series, and their verdicts overwrite each other. Each canary
// process therefore signs what it writes with an instance (NewInstance:
// hostname and a random id drawn at start), and the readers that see
// several canaries' writes (the InfluxDB and embedded stores' Verdicts, the
// proxy reading several canaries) look for two instances writing one
// series at the same time. What they find is on the verdicts
// (Verdict.Duplicates), in the log (a warning naming the region, the
// vantage and the instances) and in the vigil_duplicate_canaries gauge.
// Quorum is not changed: a region still counts once, whoever wrote it.

// DuplicateWindow is the longest window the stores look back for the
// instances writing a series (Writers, MarkDuplicates): the reader's
// maxAge when shorter, this otherwise (maxAge 0 included). Checks that run
// less often than this can write twice into one series unnoticed.
const DuplicateWindow = 2 * time.Minute

// DuplicateWarnEvery is the least time between two warnings about the same
// region, vantage and instances.
const DuplicateWarnEvery = 10 * time.Minute

// NewInstance returns a new canary instance identity: the hostname, "-",
// and 8 random hex digits ("web-7f9c-3a1b9e02"). A canary draws one at
// start: a restart is a new instance, which FindDuplicates tells apart
// from a second canary.
func NewInstance() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "canary"
	}
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return host + "-" + hex.EncodeToString(b[:])
}

// DuplicateWindowFor is the window a reader with maxAge looks back for
// duplicate writers: maxAge, capped at DuplicateWindow (0: DuplicateWindow).
func DuplicateWindowFor(maxAge time.Duration) time.Duration {
	if maxAge <= 0 || maxAge > DuplicateWindow {
		return DuplicateWindow
	}
	return maxAge
}

// SeriesWriter is what one canary instance wrote to one series within a
// window: the At of its first and last verdicts there.
type SeriesWriter struct {
	Check, Target, Region, Vantage string
	Instance                       string
	First, Last                    time.Time
}

func (w SeriesWriter) key() string {
	return w.Check + "\x00" + w.Target + "\x00" + w.Region + "\x00" + w.Vantage
}

// Duplicate is one series that two or more canary instances wrote at the
// same time.
type Duplicate struct {
	Check, Target, Region, Vantage string
	// Instances are the instances, sorted.
	Instances []string
}

// FindDuplicates returns the series that two or more instances write at
// the same time: those whose span [First, Last] holds the start (First)
// of the series' newest instance. An instance that stopped before the
// newest one started (a restart, a replaced pod, or both of two duplicates
// once their config was fixed and they restarted) is left out, so what is
// found is the series' current writers, not its past. Writers with no
// instance (verdicts of older versions) are left out. The result is sorted
// by region, vantage, check, target.
func FindDuplicates(ws []SeriesWriter) []Duplicate {
	by := map[string][]SeriesWriter{}
	for _, w := range ws {
		if w.Instance != "" {
			by[w.key()] = append(by[w.key()], w)
		}
	}
	var out []Duplicate
	for _, g := range by {
		if len(g) < 2 {
			continue
		}
		newest := g[0].First
		for _, w := range g[1:] {
			if w.First.After(newest) {
				newest = w.First
			}
		}
		var in []string
		for _, w := range g {
			if !w.Last.Before(newest) {
				in = append(in, w.Instance)
			}
		}
		sort.Strings(in)
		in = slices.Compact(in)
		if len(in) < 2 {
			continue
		}
		out = append(out, Duplicate{Check: g[0].Check, Target: g[0].Target, Region: g[0].Region, Vantage: g[0].Vantage, Instances: in})
	}
	sortDuplicates(out)
	return out
}

func sortDuplicates(ds []Duplicate) {
	sort.Slice(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		return a.Region+"\x00"+a.Vantage+"\x00"+a.Check+"\x00"+a.Target < b.Region+"\x00"+b.Vantage+"\x00"+b.Check+"\x00"+b.Target
	})
}

// MarkDuplicates sets each verdict's Duplicates from ds (matched by
// series) and returns vs.
func MarkDuplicates(vs []Verdict, ds []Duplicate) []Verdict {
	if len(ds) == 0 {
		return vs
	}
	by := make(map[string][]string, len(ds))
	for _, d := range ds {
		by[Verdict{Check: d.Check, Target: d.Target, Region: d.Region, Vantage: d.Vantage}.Key()] = d.Instances
	}
	for i := range vs {
		if in, ok := by[vs[i].Key()]; ok {
			vs[i].Duplicates = slices.Clone(in)
		}
	}
	return vs
}

// DuplicatesIn returns the duplicates the verdicts carry (Duplicates set
// by the store they were read from), one per series.
func DuplicatesIn(vs []Verdict) []Duplicate {
	seen := map[string]bool{}
	var out []Duplicate
	for _, v := range vs {
		if len(v.Duplicates) < 2 || seen[v.Key()] {
			continue
		}
		seen[v.Key()] = true
		out = append(out, Duplicate{Check: v.Check, Target: v.Target, Region: v.Region, Vantage: v.Vantage,
			Instances: slices.Clone(v.Duplicates)})
	}
	sortDuplicates(out)
	return out
}

// DuplicateWatch turns what readers find (Observe) into the log and the
// vigil_duplicate_canaries gauge. Several readers in one process (the
// proxy, the alerter, the status page) share one: the gauge holds, per
// region and vantage, the most instances any of them sees, and a warning
// is written once per DuplicateWarnEvery per region, vantage and instances
// whoever saw it.
type DuplicateWatch struct {
	// Log receives the warnings; nil: slog.Default() at the time.
	Log *slog.Logger

	gauge *prometheus.GaugeVec

	mu     sync.Mutex
	seen   map[string]map[rv]int // reader → region × vantage → instances
	warned map[string]time.Time  // region × vantage × instances → last warning
	now    func() time.Time
}

type rv struct{ region, vantage string }

// NewDuplicateWatch returns a watch with its own gauge (tests; the process
// shares Duplicates).
func NewDuplicateWatch(log *slog.Logger) *DuplicateWatch {
	return &DuplicateWatch{
		Log: log,
		gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_duplicate_canaries",
			Help: "Canary instances seen writing the same verdict series (same agent.region and agent.vantage) at the same time, by region and vantage; absent when none.",
		}, []string{"region", "vantage"}),
		seen:   map[string]map[rv]int{},
		warned: map[string]time.Time{},
		now:    time.Now,
	}
}

// Duplicates is the process's watch: the stores' Verdicts and the proxy
// report to it.
var Duplicates = NewDuplicateWatch(nil)

// Collector returns the vigil_duplicate_canaries gauge.
func (d *DuplicateWatch) Collector() prometheus.Collector { return d.gauge }

// Register registers the gauge with reg; registering it again (several
// roles of one process) is not an error.
func (d *DuplicateWatch) Register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	err := reg.Register(d.gauge)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		return nil
	}
	return err
}

// Observe records what reader (a name: "store.influxdb", "proxy") found
// now, replacing what it found before: the gauge follows, and each region
// and vantage with duplicates is logged at WARN, rate-limited
// (DuplicateWarnEvery), naming the instances and one of the series.
func (d *DuplicateWatch) Observe(reader string, ds []Duplicate) {
	type group struct {
		inst   []string
		series int
		first  Duplicate
	}
	groups := map[rv]*group{}
	var order []rv
	for _, x := range ds {
		k := rv{x.Region, x.Vantage}
		g := groups[k]
		if g == nil {
			g = &group{first: x}
			groups[k] = g
			order = append(order, k)
		}
		g.series++
		g.inst = append(g.inst, x.Instances...)
	}
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	mine := map[rv]int{}
	for _, k := range order {
		g := groups[k]
		sort.Strings(g.inst)
		g.inst = slices.Compact(g.inst)
		mine[k] = len(g.inst)
		wk := k.region + "\x00" + k.vantage + "\x00" + strings.Join(g.inst, ",")
		if last, ok := d.warned[wk]; ok && now.Sub(last) < DuplicateWarnEvery {
			continue
		}
		d.warned[wk] = now
		log := d.Log
		if log == nil {
			log = slog.Default()
		}
		log.Warn("duplicate canaries: several canary instances write the same verdicts (same agent.region and agent.vantage), so their verdicts overwrite each other and the region counts once; give each its own agent.vantage or agent.region",
			"region", k.region, "vantage", k.vantage, "instances", strings.Join(g.inst, ", "),
			"series", g.series, "check", g.first.Check, "target", g.first.Target, "reader", reader,
			"next_warning_in", DuplicateWarnEvery.String())
	}
	old := d.seen[reader]
	d.seen[reader] = mine
	touched := map[rv]bool{}
	for k := range old {
		touched[k] = true
	}
	for k := range mine {
		touched[k] = true
	}
	for k := range touched {
		n := 0
		for _, m := range d.seen {
			n = max(n, m[k])
		}
		if n >= 2 {
			d.gauge.WithLabelValues(k.region, k.vantage).Set(float64(n))
		} else {
			d.gauge.DeleteLabelValues(k.region, k.vantage)
		}
	}
	for k, t := range d.warned {
		if now.Sub(t) >= DuplicateWarnEvery {
			delete(d.warned, k)
		}
	}
}

// WriterSource is a Source that can say which canary instances wrote each
// series lately (the stores). maxAge is capped by DuplicateWindowFor.
type WriterSource interface {
	Source
	Writers(ctx context.Context, maxAge time.Duration) ([]SeriesWriter, error)
}
