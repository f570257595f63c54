package statuspage

import (
	"errors"
	"fmt"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Refresh bounds for Config.Refresh.
const (
	MinRefresh = time.Second
	MaxRefresh = time.Hour
)

// ErrRefresh: status_page.refresh is outside [MinRefresh, MaxRefresh].
var ErrRefresh = errors.New("must be between 1s and 1h")

// Config is the `status_page` config section. The page is served on
// agent.listen; fault switches (vigil demo) use agent.admin_token.
type Config struct {
	// Enabled serves the status page at "/" on agent.listen. Default true.
	Enabled *bool `mapstructure:"enabled"`
	// Title is the page title and heading. Default "vigil".
	Title string `mapstructure:"title"`
	// Refresh is the auto-refresh interval. Default 5s; 1s..1h. An explicit
	// 0s (Config.SetKeys) is an error, not the default.
	Refresh time.Duration `mapstructure:"refresh"`
	// Artifacts serves failure screenshots (Verdict.Artifact) from
	// agent.data_dir under /artifacts/ (images, text and JSON only).
	// Default true.
	Artifacts *bool `mapstructure:"artifacts"`
	// Public is a second, read-only page for customers on its own
	// listener (see PublicConfig). Off unless Public.Listen is set.
	Public PublicConfig `mapstructure:"public"`

	// set holds the keys the file set (SetKeys).
	set units.KeySet
}

// SetKeys records which keys the config file set, relative to the section
// ("refresh"), so that an explicit refresh: 0s is an error rather than the
// default. Without SetKeys a 0 reads as omitted.
func (c *Config) SetKeys(keys []string) { c.set = units.NewKeySet(keys) }

// ValidateAndSetDefaults sets the defaults and checks the ranges. Errors
// start with the key relative to the section ("refresh: …").
func (c *Config) ValidateAndSetDefaults() error {
	t := true
	if c.Enabled == nil {
		c.Enabled = &t
	}
	if c.Artifacts == nil {
		a := true
		c.Artifacts = &a
	}
	if c.Title == "" {
		c.Title = DefaultTitle
	}
	if errs := c.set.ExplicitZeros([]units.ZeroKey{units.Zero("refresh", c.Refresh == 0, DefaultRefresh.String())}); errs != nil {
		return errs[0]
	}
	if c.Refresh == 0 {
		c.Refresh = DefaultRefresh
	}
	if c.Refresh < MinRefresh || c.Refresh > MaxRefresh {
		return fmt.Errorf("refresh: %s: %w", c.Refresh, ErrRefresh)
	}
	return c.Public.validate(c.Title)
}

// IsEnabled reports Enabled, true when unset.
func (c Config) IsEnabled() bool { return c.Enabled == nil || *c.Enabled }

// ServeArtifacts reports Artifacts, true when unset.
func (c Config) ServeArtifacts() bool { return c.Artifacts == nil || *c.Artifacts }
