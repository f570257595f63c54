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
