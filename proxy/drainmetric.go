package proxy

import "github.com/prometheus/client_golang/prometheus"

var drainedDesc = prometheus.NewDesc("vigil_proxy_origin_drained",
	"1 while an operator has the origin drained on this proxy (POST /api/v1/origins/{name}/drain), 0 otherwise. The generated live_errors rules leave a drained origin out: a drain is planned work, not a live failure.",
	[]string{"pool", "origin"}, nil)

// drainedCollector exports vigil_proxy_origin_drained from the running
// config's origins at scrape time: every origin has its series (0 when in
// service), and one a reload removes goes with it.
type drainedCollector struct{ p *Proxy }

var _ prometheus.Collector = drainedCollector{}

func (c drainedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- drainedDesc }

func (c drainedCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.p.state.Load()
	if st == nil {
		return
	}
	for _, pl := range st.pools {
		// Two origins of a pool may share a name (two paths of one
		// host:port), as they share vigil_proxy_origin_available: one
		// series, drained when either is.
		drained := make(map[string]bool, len(pl.origins))
		var names []string
		for _, o := range pl.origins {
			if _, ok := drained[o.name]; !ok {
				names = append(names, o.name)
			}
			drained[o.name] = drained[o.name] || o.flags.Load()&flagDrained != 0
		}
		for _, n := range names {
			ch <- prometheus.MustNewConstMetric(drainedDesc, prometheus.GaugeValue, b2f(drained[n]), pl.name, n)
		}
	}
}
