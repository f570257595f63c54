package alerting

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"go.yaml.in/yaml/v3"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// file is the part of vigil's config file this package owns.
type file struct {
	SLOs     []SLO  `mapstructure:"slos"`
	Alerting Config `mapstructure:"alerting"`
}

// durationHook parses "5s", "600ms" and "30d" like the config loader.
func durationHook(from, to reflectType, data any) (any, error) {
	if to != reflect.TypeOf(time.Duration(0)) {
		return data, nil
	}
	s, ok := data.(string)
	if !ok {
		return nil, fmt.Errorf("%v: want a duration with a unit", data)
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil {
			return nil, err
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

type reflectType = reflect.Type

// load decodes a YAML file the way the loader does (unknown keys are
// errors) and validates it; it returns the errors one per string.
func load(t *testing.T, path string) (file, []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	var f file
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{Result: &f, ErrorUnused: true, WeaklyTypedInput: true,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(durationHook, mapstructure.TextUnmarshallerHookFunc())})
	if err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(raw); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	var errs []error
	for i := range f.SLOs {
		errs = append(errs, units.Prefix(fmt.Sprintf("slos[%d]", i), f.SLOs[i].ValidateAndSetDefaults()))
	}
	errs = append(errs, ValidateSLOs(f.SLOs), units.Prefix("alerting", f.Alerting.ValidateAndSetDefaults()))
	var out []string
	for _, e := range units.Errors(errors.Join(errs...)) {
		out = append(out, e.Error())
	}
	return f, out
}

func TestValidConfigDefaults(t *testing.T) {
	f, errs := load(t, "testdata/valid.yaml")
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	c := f.Alerting
	if c.Quorum != 2 || c.EvaluationInterval != 15*time.Second || c.RepeatInterval != 4*time.Hour ||
		c.ResolveTimeout != 5*time.Minute || c.GroupWait != 0 || c.Down.For != time.Minute ||
		c.Down.Severity != SeverityPage || c.TTFB.Severity != SeverityTicket || c.TTFB.MinSamples != 3 || c.BurnRate.MinRuns != 10 ||
		c.DeadMan.Intervals != 3 || c.DeadMan.ForgetAfter != 24*time.Hour || c.CertExpiryDays != 14 ||
		c.StatusPageURL != "http://127.0.0.1:9470" || c.Retry != (RetryConfig{5, time.Second, 30 * time.Second, 10 * time.Second, 10 * time.Second, 5 * time.Minute}) {
		t.Fatalf("defaults: %+v", c)
	}
	if c.Receivers[2].PagerDuty.URL != DefaultPagerDutyURL || c.Receivers[3].Alertmanager.URL != "http://127.0.0.1:9093" {
		t.Fatalf("receiver defaults: %+v %+v", c.Receivers[2].PagerDuty, c.Receivers[3].Alertmanager)
	}
	if string(c.Receivers[0].Webhook.Headers["authorization"]) != "Bearer hdr-456" {
		t.Fatalf("headers: %v", c.Receivers[0].Webhook.Headers)
	}
	if f.SLOs[0].Objective != 99.9 || f.SLOs[0].Window != 30*24*time.Hour || f.SLOs[1].TTFBP95 != 600*time.Millisecond {
		t.Fatalf("slos: %+v", f.SLOs)
	}
	if !c.Maintenance[0].Active(time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC), "asset") {
		t.Fatal("maintenance not compiled")
	}
	// Secrets never print, whatever the verb or encoding.
	js, _ := json.Marshal(c)
	dump := fmt.Sprintf("%v %+v %#v %s", c, c, c, js)
	for _, s := range []string{"tok-123", "hdr-456", "slack-789", "pd-key-000"} {
		if strings.Contains(dump, s) {
			t.Errorf("secret %q printed", s)
		}
	}
}

func TestInvalidConfigs(t *testing.T) {
	paths, _ := filepath.Glob("testdata/invalid-*.yaml")
	if len(paths) == 0 {
		t.Fatal("no testdata")
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			b, _ := os.ReadFile(p)
			var want []string
			for _, line := range strings.Split(string(b), "\n") {
				if w, ok := strings.CutPrefix(line, "# want: "); ok {
					want = append(want, w)
				}
			}
			_, got := load(t, p)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for _, g := range got {
				for _, s := range []string{"tok-123", "slack-789"} {
					if strings.Contains(g, s) {
						t.Errorf("secret %q in %q", s, g)
					}
				}
			}
		})
	}
}

func TestSentinelErrors(t *testing.T) {
	c := Config{Receivers: []Receiver{{Name: "x"}}}
	if err := c.ValidateAndSetDefaults(); !errors.Is(err, ErrNoReceiverKind) {
		t.Fatalf("err = %v", err)
	}
	s := SLO{Name: "a", Check: "c"}
	if err := s.ValidateAndSetDefaults(); !errors.Is(err, ErrNoObjective) {
		t.Fatalf("err = %v", err)
	}
}
