package alerting

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the alerter's Prometheus series.
type metrics struct {
	// notifications counts deliveries by receiver and result (success,
	// retry, failure, dropped); every receiver's series start at 0.
	notifications *prometheus.CounterVec
	// active is the number of firing alerts per rule (silenced included).
	active *prometheus.GaugeVec
	// evalErrors counts evaluations that failed on a store error.
	evalErrors prometheus.Counter
	// lastEvalSuccess is when an evaluation last worked, Unix seconds (the
	// Alerter's start until one did): the generated
	// VigilAlerterNotEvaluating rule fires when it grows old.
	lastEvalSuccess prometheus.Gauge
}

func newMetrics(reg *prometheus.Registry) (*metrics, error) {
	m := &metrics{
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_alert_notifications_total",
			Help: "Alert notification deliveries by receiver and result (success, retry, failure, dropped).",
		}, []string{"receiver", "result"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_alerts_active",
			Help: "Firing alerts by rule (silenced ones included).",
		}, []string{"rule"}),
		evalErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_alert_evaluation_errors_total",
			Help: "Alert evaluations that failed because the store could not be read.",
		}),
		lastEvalSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_alert_last_evaluation_success_timestamp_seconds",
			Help: "When an alert evaluation last worked (read the store), Unix seconds; the alerter's start until one did.",
		}),
	}
	for _, c := range []prometheus.Collector{m.notifications, m.active, m.evalErrors, m.lastEvalSuccess} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, errors.New("alerting: metrics already registered (one Alerter per registry)")
			}
			return nil, err
		}
	}
	for _, r := range AllRules {
		m.active.WithLabelValues(r)
	}
	return m, nil
}

// precreate makes a receiver's series exist at 0.
func (m *metrics) precreate(receiver string) {
	for _, r := range []string{ResultSuccess, ResultRetry, ResultFailure, ResultDropped} {
		m.notifications.WithLabelValues(receiver, r)
	}
}
