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
var regionColors = [regionPaletteLen]string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#8F6A00", "#56508F", "#B2182B", "#4D4D4D"}

type tick struct {
	Pos   float64
	Label string
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
	Stat     string // "p95" or "p50"
	Color    string
	Dashed   bool
	Segments []segment
}

type legend struct {
	Region   string
	Color    string
	P50, P95 time.Duration
	Runs     int
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

// ttfbCharts buckets history into chartBuckets intervals over [from, to] and
// draws, per target, the p95 (solid) and p50 (dashed) TTFB of each region.
// Runs without a first byte (connection failures) are left out.
func ttfbCharts(vs []reporting.Verdict, from, to time.Time) []chart {
	span := to.Sub(from)
	if span <= 0 {
		return nil
	}
	step := span / chartBuckets
	type key struct{ target, region string }
	buckets := map[key]*[chartBuckets][]time.Duration{}
	all := map[key][]time.Duration{}
	targets := map[string]map[string]bool{}
	for _, v := range vs {
		if v.TTFB <= 0 || v.At.Before(from) || v.At.After(to) {
			continue
		}
		k := key{v.Target, v.Region}
		b := buckets[k]
		if b == nil {
			b = &[chartBuckets][]time.Duration{}
			buckets[k] = b
		}
		i := min(int(v.At.Sub(from)/step), chartBuckets-1)
		b[i] = append(b[i], v.TTFB)
		all[k] = append(all[k], v.TTFB)
		if targets[v.Target] == nil {
			targets[v.Target] = map[string]bool{}
		}
		targets[v.Target][v.Region] = true
	}
	names := make([]string, 0, len(targets))
	for t := range targets {
		names = append(names, t)
	}
	slices.Sort(names)

	var out []chart
	for ti, t := range names {
		regions := make([]string, 0, len(targets[t]))
		for r := range targets[t] {
			regions = append(regions, r)
		}
		slices.Sort(regions)
		type stats struct{ p50, p95 [chartBuckets]time.Duration }
		st := map[string]*stats{}
		var top time.Duration
		for _, r := range regions {
			s := &stats{}
			for i, b := range buckets[key{t, r}] {
				if len(b) == 0 {
					continue
				}
				slices.Sort(b)
				s.p50[i], s.p95[i] = percentile(b, 0.5), percentile(b, 0.95)
				top = max(top, s.p95[i])
			}
			st[r] = s
		}
		yMax, yTicks := niceScale(top)
		c := chart{ID: "ttfb-" + strconv.Itoa(ti), Target: t, W: chartW, H: chartH, PX: padL, PY: padT, PW: plotW, PH: plotH,
			YTicks: yTicks, From: from, To: to}
		for i := 0; i <= xTicks; i++ {
			at := from.Add(span * time.Duration(i) / xTicks)
			c.XTicks = append(c.XTicks, tick{Pos: padL + plotW*float64(i)/xTicks, Label: timeLabel(at, span)})
		}
		var desc []string
		for ri, r := range regions {
			col := regionColors[ri%regionPaletteLen]
			s := st[r]
			xs := func(i int) float64 { return padL + plotW*(float64(i)+0.5)/chartBuckets }
			ys := func(d time.Duration) float64 { return padT + plotH - plotH*float64(d)/float64(yMax) }
			c.Series = append(c.Series,
				series{Region: r, Stat: "p95", Color: col, Segments: segments(s.p95[:], xs, ys)},
				series{Region: r, Stat: "p50", Color: col, Dashed: true, Segments: segments(s.p50[:], xs, ys)})
			sorted := slices.Clone(all[key{t, r}])
			slices.Sort(sorted)
			l := legend{Region: r, Color: col, P50: percentile(sorted, 0.5), P95: percentile(sorted, 0.95), Runs: len(sorted)}
			c.Legend = append(c.Legend, l)
			desc = append(desc, fmt.Sprintf("%s: p50 %s, p95 %s over %d runs", regionLabel(r), fmtMs(l.P50), fmtMs(l.P95), l.Runs))
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
