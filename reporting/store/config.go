package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Default retentions of the embedded store.
const (
	DefaultRetention       = 7 * 24 * time.Hour
	DefaultRollupRetention = 35 * 24 * time.Hour
)

// Config is the top-level `store:` section.
type Config struct {
	// Embedded is the SQLite store under agent.data_dir; on unless
	// `enabled: false`.
	Embedded EmbeddedConfig `mapstructure:"embedded"`
	// InfluxDB, when present, adds an InfluxDB sink and source alongside the
	// embedded store.
	InfluxDB *influx.Config `mapstructure:"influxdb"`

	// set holds the keys the file set, relative to the section (SetKeys).
	set units.KeySet
}

// SetKeys records which keys the config file set, relative to the section
// ("embedded.retention"), so that an explicit 0 is an error rather than the
// default. Without SetKeys a 0 reads as omitted.
func (c *Config) SetKeys(keys []string) { c.set = units.NewKeySet(keys) }

// explicitZeros rejects the keys the file set to 0: none of them has a
// meaning for 0 (a retention of nothing, a batch of no points).
func (c *Config) explicitZeros() []error {
	keys := []units.ZeroKey{
		units.Zero("embedded.retention", c.Embedded.Retention == 0, "7d"),
		units.Zero("embedded.rollup_retention", c.Embedded.RollupRetention == 0, "35d, or retention when longer"),
	}
	if i := c.InfluxDB; i != nil {
		keys = append(keys,
			units.Zero("influxdb.batch_size", i.BatchSize == 0, fmt.Sprint(influx.DefaultBatchSize)),
			units.Zero("influxdb.flush_interval", i.FlushInterval == 0, influx.DefaultFlushInterval.String()),
			units.Zero("influxdb.spool_max", i.SpoolMax == 0, "1GiB"),
			units.Zero("influxdb.timeout", i.Timeout == 0, influx.DefaultTimeout.String()))
	}
	return c.set.ExplicitZeros(keys)
}

// EmbeddedConfig is `store.embedded`.
type EmbeddedConfig struct {
	// Enabled turns the embedded store on or off. Default true.
	Enabled *bool `mapstructure:"enabled"`
	// Retention is how long raw verdicts and signals are kept. Default 7d.
	Retention time.Duration `mapstructure:"retention"`
	// RollupRetention is how long per-minute rollups are kept; at least
	// Retention. Default 35d.
	RollupRetention time.Duration `mapstructure:"rollup_retention"`
}

// On reports whether the embedded store is enabled.
func (c EmbeddedConfig) On() bool { return c.Enabled == nil || *c.Enabled }

// Options returns the Open options for this config.
func (c EmbeddedConfig) Options() Options {
	return Options{Retention: c.Retention, RollupRetention: c.RollupRetention}
}

// ValidateAndSetDefaults fills in defaults and checks the keys.
func (c *Config) ValidateAndSetDefaults() error {
	if errs := c.explicitZeros(); errs != nil {
		return errors.Join(errs...)
	}
	errs := []error{units.Prefix("embedded", c.Embedded.ValidateAndSetDefaults())}
	if c.InfluxDB != nil {
		errs = append(errs, units.Prefix("influxdb", c.InfluxDB.ValidateAndSetDefaults()))
	}
	if !c.Embedded.On() && c.InfluxDB == nil {
		errs = append(errs, errors.New("embedded.enabled: false needs store.influxdb, or verdicts are kept nowhere"))
	}
	return errors.Join(errs...)
}

// ValidateAndSetDefaults fills in defaults and checks the keys.
func (c *EmbeddedConfig) ValidateAndSetDefaults() error {
	if c.Enabled == nil {
		t := true
		c.Enabled = &t
	}
	var errs []error
	if c.Retention == 0 {
		c.Retention = DefaultRetention
	} else if c.Retention < time.Hour {
		errs = append(errs, fmt.Errorf("retention: %s: must be at least 1h", c.Retention))
	}
	if c.RollupRetention == 0 {
		c.RollupRetention = max(DefaultRollupRetention, c.Retention)
	} else if c.RollupRetention < c.Retention {
		errs = append(errs, fmt.Errorf("rollup_retention: %s: must be at least retention (%s)", c.RollupRetention, c.Retention))
	}
	return errors.Join(errs...)
}
