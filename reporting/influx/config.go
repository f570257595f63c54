package influx

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/tlsclient"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Defaults for Config.
const (
	DefaultBatchSize     = 500
	DefaultFlushInterval = time.Second
	DefaultSpoolMax      = units.ByteSize(1 << 30) // 1 GiB
	DefaultTimeout       = 10 * time.Second
)

// ErrNoURL and ErrNoBucket are returned by ValidateAndSetDefaults.
var (
	ErrNoURL    = errors.New("url: required")
	ErrNoBucket = errors.New("bucket: required (InfluxDB 1.8: \"database/retention_policy\", e.g. \"vigil/autogen\")")
)

// Config is the `store.influxdb` section. InfluxDB 2.x takes a token, org and
// bucket; InfluxDB 1.8+ (with `[http] flux-enabled = true`) takes token
// "user:password" or "" and bucket "database/retention_policy", org ignored.
type Config struct {
	// URL of the InfluxDB HTTP API, e.g. "http://127.0.0.1:8086". Required.
	URL string `mapstructure:"url"`
	// Token is the API token (2.x) or "user:password" (1.8); empty for an
	// unauthenticated 1.8. Never logged.
	Token string `mapstructure:"token"`
	// Org is the 2.x organisation; empty on 1.8.
	Org string `mapstructure:"org"`
	// Bucket to write to and read from. Required.
	Bucket string `mapstructure:"bucket"`
	// BatchSize is the most points sent in one write request. Default 500.
	BatchSize int `mapstructure:"batch_size"`
	// FlushInterval is how long points wait in memory before they are written
	// to the outbox and sent, at most. Default 1s.
	FlushInterval time.Duration `mapstructure:"flush_interval"`
	// SpoolMax bounds the on-disk outbox; when full the oldest points are
	// dropped and counted. Default 1GiB.
	SpoolMax units.ByteSize `mapstructure:"spool_max"`
	// Timeout bounds one write or query request. Default 10s.
	Timeout time.Duration `mapstructure:"timeout"`
	// TLS configures the https client: ca_file (a PEM bundle trusted
	// instead of the system pool), server_name, cert_file and key_file (a
	// client certificate), insecure_skip_verify. Default: verified against
	// the system pool and the URL's host. Only with an https URL.
	TLS tlsclient.Config `mapstructure:"tls"`
}

// ValidateAndSetDefaults fills in defaults and checks the keys.
func (c *Config) ValidateAndSetDefaults() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, ErrNoURL)
	} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("url: %q: want http(s)://host:port", units.RedactURL(c.URL)))
	}
	if strings.TrimSpace(c.Bucket) == "" {
		errs = append(errs, ErrNoBucket)
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	} else if c.BatchSize < 0 {
		errs = append(errs, fmt.Errorf("batch_size: %d: must be positive", c.BatchSize))
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = DefaultFlushInterval
	} else if c.FlushInterval < 0 {
		errs = append(errs, fmt.Errorf("flush_interval: %s: must be positive", c.FlushInterval))
	}
	if c.SpoolMax == 0 {
		c.SpoolMax = DefaultSpoolMax
	} else if c.SpoolMax < 1<<20 {
		errs = append(errs, fmt.Errorf("spool_max: %s: must be at least 1MiB", c.SpoolMax))
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	} else if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout: %s: must be positive", c.Timeout))
	}
	if err := c.TLS.Load(); err != nil {
		errs = append(errs, units.Prefix("tls", err))
	}
	if u, err := url.Parse(c.URL); err == nil && u.Scheme == "http" && c.TLS.Set() {
		errs = append(errs, fmt.Errorf("tls: set, but url %q is http: use https://", units.RedactURL(c.URL)))
	}
	return errors.Join(errs...)
}

// Warnings lists what the section allows but weakens, each led by its key:
// tls.insecure_skip_verify: true (certificates not verified), and a token
// sent over plain http to a host that is not loopback (127.0.0.0/8, ::1,
// localhost), which travels unencrypted, readable by anyone on the path. A
// warning, not an error: an InfluxDB on a trusted private network is a
// choice, but one that must not go unnoticed. Call after
// ValidateAndSetDefaults succeeded.
func (c *Config) Warnings() []string {
	var warns []string
	for _, w := range c.TLS.Warnings() {
		warns = append(warns, "tls."+w)
	}
	u, err := url.Parse(c.URL)
	if err != nil || u.Scheme != "http" || strings.TrimSpace(c.Token) == "" || units.LoopbackHost(u.Hostname()) {
		return warns
	}
	return append(warns, fmt.Sprintf("url: %q: http, not https: the token travels unencrypted to %s; use https, or a loopback address for an InfluxDB on this host",
		units.RedactURL(c.URL), u.Hostname()))
}
