package statuspage

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// Chart geometry in SVG user units; the SVG scales to its container.
const (
	chartW, chartH         = 1000.0, 200.0
	padL, padR, padT, padB = 64.0, 30.0, 14.0, 30.0
	chartBuckets           = 60
	plotW, plotH           = chartW - padL - padR, chartH - padT - padB
	regionPaletteLen       = 8
	maxTicks               = 5
	xTicks                 = 6
)

// regionColors are distinguishable on white and for the common colour-vision
// deficiencies (Okabe–Ito), each at least 3:1 against the background.
var regionColors = [regionPaletteLen]string{"#0072B2", "#D55E00", "#008A64", "#B0568C", "#8F6A00", "#56508F", "#B2182B", "#4D4D4D"}

type tick struct {
	Pos   float64
	Label string
	// Anchor is the SVG text-anchor: the last x label ends at its tick so it
	// stays inside the chart.
	Anchor string
}

// segment is a run of consecutive buckets with data, drawn as one polyline.
type segment struct {
	Points string
	// Dot is set for a one-point segment, drawn as a circle instead.
	Dot  bool
	X, Y float64
}

type series struct {
	Region   string
	Stat     string // "p95", "p50" or "mean"
	Color    string
	Dashed   bool
	Segments []segment
}

type legend struct {
	Region         string
	Color          string
	LoName, HiName string // "p50"/"p95" from history, "mean"/"p95≈" from rollups
	Lo, Hi         time.Duration
	// LoAtLeast, HiAtLeast: the figure falls on runs that timed out before
	// their first byte; it is their wait, a lower bound (shown "≥").
	LoAtLeast, HiAtLeast bool
	// Runs counts the TTFB samples, TimedOut those that timed out before
	// their first byte (reporting.Verdict.TTFBSample).
	Runs, TimedOut int
}

// chart is one server-rendered TTFB line chart (one target, a line pair per region).
type chart struct {
	ID, Target     string
	W, H           float64
	PX, PY, PW, PH float64
	YTicks, XTicks []tick
	Series         []series
	Legend         []legend
	Empty          bool
	From, To       time.Time
	Desc           string
}

// chartStats are one target × region's bucketed figures: Hi is the p95 line,
// Lo the p50 (history) or mean (rollups) line; 0 = no data.
type chartStats struct {
	Hi, Lo   [chartBuckets]time.Duration
	Legend   legend
	hasFirst bool
}

type chartKey struct{ target, region string }

// ttfbCharts buckets raw history into chartBuckets intervals over [from, to]
// and draws, per target, the p95 (solid) and p50 (dashed) TTFB of each
// region. The runs counted are the TTFB samples (reporting.Verdict.TTFBSample):
// runs with a TTFB, and runs that timed out before their first byte, which
// rank above them and are drawn at their wait (about the timeout), so an
// origin slower than the timeout shows as slow, not as missing points. Runs
// that failed otherwise (refused, DNS, TLS…) are left out.
func ttfbCharts(vs []reporting.Verdict, from, to time.Time) []chart {
	span := to.Sub(from)
	if span <= 0 {
		return nil
	}
	step := span / chartBuckets
	type samples struct{ measured, waits []time.Duration }
	buckets := map[chartKey]*[chartBuckets]samples{}
	all := map[chartKey]*samples{}
	for _, v := range vs {
		d, timedOut, ok := v.TTFBSample()
		if !ok || v.At.Before(from) || v.At.After(to) {
			continue
		}
		k := chartKey{v.Target, v.Region}
		b := buckets[k]
		if b == nil {
			b = &[chartBuckets]samples{}
			buckets[k] = b
			all[k] = &samples{}
		}
		i := min(int(v.At.Sub(from)/step), chartBuckets-1)
		if timedOut {
			b[i].waits = append(b[i].waits, d)
			all[k].waits = append(all[k].waits, d)
		} else {
			b[i].measured = append(b[i].measured, d)
			all[k].measured = append(all[k].measured, d)
		}
	}
	stats := map[chartKey]*chartStats{}
	for k, b := range buckets {
		s := &chartStats{}
		for i, sm := range b {
			if len(sm.measured)+len(sm.waits) == 0 {
				continue
			}
			s.Lo[i] = reporting.TTFBPercentileOf(sm.measured, sm.waits, 0.5).D
			s.Hi[i] = reporting.TTFBPercentileOf(sm.measured, sm.waits, 0.95).D
		}
		a := all[k]
		lo, hi := reporting.TTFBPercentileOf(a.measured, a.waits, 0.5), reporting.TTFBPercentileOf(a.measured, a.waits, 0.95)
		s.Legend = legend{Region: k.region, LoName: "p50", HiName: "p95", Lo: lo.D, Hi: hi.D,
			LoAtLeast: lo.TimedOut, HiAtLeast: hi.TimedOut, Runs: hi.Runs, TimedOut: len(a.waits)}
		stats[k] = s
	}
	return drawCharts(stats, from, to)
}

// ttfbRollupCharts draws long windows from per-minute rollups: the p95 line
// is the mean of the minutes' p95s weighted by their TTFB samples (a minute
// whose p95 timed out at its wait), the dashed line the mean TTFB of the
// runs with one (rollups keep no median).
func ttfbRollupCharts(rs []reporting.Rollup, from, to time.Time) []chart {
	span := to.Sub(from)
	if span <= 0 {
		return nil
	}
	step := span / chartBuckets
	type acc struct {
		runs, samples  [chartBuckets]int
		sum, p95w      [chartBuckets]time.Duration
		totRuns, total int
		timedOut       int
		totSum, totHi  time.Duration
		hiAtLeast      bool
	}
	accs := map[chartKey]*acc{}
	for _, r := range rs {
		n := r.TTFBSamples()
		if n <= 0 || r.Minute.Before(from.Add(-time.Minute)) || r.Minute.After(to) {
			continue
		}
		k := chartKey{r.Target, r.Region}
		a := accs[k]
		if a == nil {
			a = &acc{}
			accs[k] = a
		}
		i := min(max(int(r.Minute.Sub(from)/step), 0), chartBuckets-1)
		a.runs[i] += r.TTFBRuns
		a.samples[i] += n
		a.sum[i] += r.TTFBSum
		a.p95w[i] += r.TTFBP95 * time.Duration(n)
		a.totRuns += r.TTFBRuns
		a.total += n
		a.timedOut += r.TTFBTimeouts
		a.totSum += r.TTFBSum
		a.totHi += r.TTFBP95 * time.Duration(n)
		a.hiAtLeast = a.hiAtLeast || r.TTFBP95TimedOut()
	}
	stats := map[chartKey]*chartStats{}
	for k, a := range accs {
		s := &chartStats{}
		for i := range chartBuckets {
			if n := time.Duration(a.runs[i]); n > 0 {
				s.Lo[i] = a.sum[i] / n
			}
			if n := time.Duration(a.samples[i]); n > 0 {
				s.Hi[i] = a.p95w[i] / n
			}
		}
		s.Legend = legend{Region: k.region, LoName: "mean", HiName: "p95≈", Lo: a.totSum / time.Duration(max(a.totRuns, 1)),
			Hi: a.totHi / time.Duration(max(a.total, 1)), HiAtLeast: a.hiAtLeast, Runs: a.total, TimedOut: a.timedOut}
		stats[k] = s
	}
	return drawCharts(stats, from, to)
}

// drawCharts lays out one chart per target with a solid Hi and a dashed Lo
// line per region.
func drawCharts(stats map[chartKey]*chartStats, from, to time.Time) []chart {
	span := to.Sub(from)
	targets := map[string][]string{}
	for k := range stats {
		targets[k.target] = append(targets[k.target], k.region)
	}
	names := make([]string, 0, len(targets))
	for t := range targets {
		names = append(names, t)
	}
	slices.Sort(names)
	var out []chart
	for ti, t := range names {
		regions := targets[t]
		slices.Sort(regions)
		var top time.Duration
		for _, r := range regions {
			for _, d := range stats[chartKey{t, r}].Hi {
				top = max(top, d)
			}
			for _, d := range stats[chartKey{t, r}].Lo {
				top = max(top, d)
			}
		}
		yMax, yTicks := niceScale(top)
		c := chart{ID: "ttfb-" + strconv.Itoa(ti), Target: t, W: chartW, H: chartH, PX: padL, PY: padT, PW: plotW, PH: plotH,
			YTicks: yTicks, From: from, To: to}
		for i := 0; i <= xTicks; i++ {
			at := from.Add(span * time.Duration(i) / xTicks)
			anchor := "middle"
			if i == xTicks {
				anchor = "end"
			}
			c.XTicks = append(c.XTicks, tick{Pos: padL + plotW*float64(i)/xTicks, Label: timeLabel(at, span), Anchor: anchor})
		}
		xs := func(i int) float64 { return padL + plotW*(float64(i)+0.5)/chartBuckets }
		ys := func(d time.Duration) float64 { return padT + plotH - plotH*float64(d)/float64(yMax) }
		var desc []string
		for ri, r := range regions {
			s := stats[chartKey{t, r}]
			col := regionColors[ri%regionPaletteLen]
			l := s.Legend
			l.Color = col
			c.Series = append(c.Series,
				series{Region: r, Stat: "p95", Color: col, Segments: segments(s.Hi[:], xs, ys)},
				series{Region: r, Stat: l.LoName, Color: col, Dashed: true, Segments: segments(s.Lo[:], xs, ys)})
			c.Legend = append(c.Legend, l)
			desc = append(desc, fmt.Sprintf("%s: %s %s, %s %s over %s", regionLabel(r), l.LoName, atLeast(l.LoAtLeast, l.Lo),
				l.HiName, atLeast(l.HiAtLeast, l.Hi), fmtRuns(l.Runs)+timedOutNote(l.TimedOut)))
		}
		c.Desc = "TTFB of " + t + " by region: " + strings.Join(desc, "; ")
		out = append(out, c)
	}
	return out
}

// segments turns bucket values (0 = no data) into polylines broken at gaps.
func segments(vals []time.Duration, xs func(int) float64, ys func(time.Duration) float64) []segment {
	var out []segment
	var pts []string
	var lastX, lastY float64
	flush := func() {
		switch len(pts) {
		case 0:
		case 1:
			out = append(out, segment{Dot: true, X: lastX, Y: lastY})
		default:
			out = append(out, segment{Points: strings.Join(pts, " ")})
		}
		pts = pts[:0]
	}
	for i, v := range vals {
		if v <= 0 {
			flush()
			continue
		}
		lastX, lastY = xs(i), ys(v)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", lastX, lastY))
	}
	flush()
	return out
}

// niceScale picks a y-axis maximum of 1, 2 or 5 × 10^n ms at or above top and
// its ticks.
func niceScale(top time.Duration) (time.Duration, []tick) {
	ms := float64(top) / float64(time.Millisecond)
	if ms <= 0 {
		ms = 1
	}
	raw := ms / (maxTicks - 1)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	stepMs := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			stepMs = m * mag
			break
		}
	}
	n := int(math.Ceil(ms / stepMs))
	if n < 1 {
		n = 1
	}
	yMax := time.Duration(float64(n) * stepMs * float64(time.Millisecond))
	var ticks []tick
	for i := 0; i <= n; i++ {
		v := float64(i) * stepMs
		ticks = append(ticks, tick{Pos: padT + plotH - plotH*float64(i)/float64(n), Label: strconv.FormatFloat(v, 'f', -1, 64) + " ms"})
	}
	return yMax, ticks
}

func timeLabel(t time.Time, span time.Duration) string {
	t = t.UTC()
	if span > 12*time.Hour {
		return t.Format("Jan 2 15:04")
	}
	return t.Format("15:04")
}

// atLeast formats d, "≥ d" when it is a lower bound (a figure that falls on
// runs that timed out before their first byte).
func atLeast(lower bool, d time.Duration) string {
	if lower {
		return "≥ " + fmtMs(d)
	}
	return fmtMs(d)
}

// timedOutNote is ", N timed out" for N > 0 runs that timed out before
// their first byte, "" otherwise.
func timedOutNote(n int) string {
	if n <= 0 {
		return ""
	}
	return ", " + strconv.Itoa(n) + " timed out"
}
