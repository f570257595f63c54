package store

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
)

// Backend is what every verdict store implements: the embedded Store and
// influx.Store.
type Backend interface {
	reporting.Sink
	reporting.HistorySource
	reporting.SignalSink
	reporting.SignalSource
}

var (
	_ Backend = (*Store)(nil)
	_ Backend = (*influx.Store)(nil)
)

// Backends are the stores a Config asks for, opened.
type Backends struct {
	// Embedded is the SQLite store; nil when store.embedded.enabled is false.
	Embedded *Store
	// Influx is the InfluxDB store; nil without store.influxdb.
	Influx *influx.Store
}

// OpenBackends opens the stores cfg enables under dataDir (agent.data_dir):
// the embedded store at <dataDir>/vigil.db and the InfluxDB outbox at
// <dataDir>/outbox/. cfg must have passed ValidateAndSetDefaults. log may be
// nil (slog.Default()).
func OpenBackends(cfg Config, dataDir string, log *slog.Logger) (*Backends, error) {
	b := &Backends{}
	if cfg.Embedded.On() {
		o := cfg.Embedded.Options()
		o.Log = log
		s, err := Open(dataDir, o)
		if err != nil {
			return nil, err
		}
		b.Embedded = s
	}
	if cfg.InfluxDB != nil {
		s, err := influx.Open(*cfg.InfluxDB, dataDir, influx.Options{Log: log})
		if err != nil {
			b.Close()
			return nil, err
		}
		b.Influx = s
	}
	if b.Embedded == nil && b.Influx == nil {
		return nil, errors.New("store: no backend enabled")
	}
	return b, nil
}

// Sinks returns the enabled stores as fan-out sinks named "embedded" and
// "influxdb" (the vigil_sink_dropped_total{sink} labels).
func (b *Backends) Sinks() []reporting.NamedSink {
	var out []reporting.NamedSink
	if b.Embedded != nil {
		out = append(out, reporting.NamedSink{Name: "embedded", Sink: b.Embedded})
	}
	if b.Influx != nil {
		out = append(out, reporting.NamedSink{Name: "influxdb", Sink: b.Influx})
	}
	return out
}

// Source is the store readers (proxy, alerter, status page, API) should use:
// InfluxDB when configured, since it holds every region's verdicts, else the
// embedded store.
func (b *Backends) Source() Backend {
	if b.Influx != nil {
		return b.Influx
	}
	return b.Embedded
}

// Collectors returns the InfluxDB write metrics (none for the embedded store).
func (b *Backends) Collectors() []prometheus.Collector {
	if b.Influx == nil {
		return nil
	}
	return b.Influx.Collectors()
}

// Close closes every store; close the Fanout feeding them first so its
// queues drain into them.
func (b *Backends) Close() error {
	var errs []error
	if b.Influx != nil {
		if err := b.Influx.Close(); err != nil {
			errs = append(errs, fmt.Errorf("influxdb: %w", err))
		}
	}
	if b.Embedded != nil {
		if err := b.Embedded.Close(); err != nil {
			errs = append(errs, fmt.Errorf("embedded: %w", err))
		}
	}
	return errors.Join(errs...)
}
