package grafana

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	vigilalerting "github.com/vigil-synthetics/vigil/reporting/alerting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
)

// certLines writes the latest verdicts of check web (tier deep) per target
// and region, the certificate's expiry in the verdict's JSON field as the
// canary writes it (reporting/influx: key "ce", Unix ns): edge-a expires
// in 5 days in eu-west, fails with cause cert in us-east and is fine (60
// days) in ap-south; edge-b expires in 5 days in eu-west only (ap-south's
// error text quotes a "ce" key of 1 ns, which is not its expiry); edge-c
// expires in 5 days in eu-west and us-east, but eu-west's verdict expired;
// edge-d is plain HTTP (no expiry) written before the JSON field existed.
func certLines(now time.Time) string {
	const day = 24 * time.Hour
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	var sb strings.Builder
	for _, v := range []struct {
		target, region string
		ok             bool
		cause, err     string
		certIn         time.Duration // 0: no certificate
		expired        bool
	}{
		{"edge-a", "eu-west", true, "", "", 5 * day, false},
		{"edge-a", "us-east", false, "cert", "x509: certificate signed by unknown authority", 0, false},
		{"edge-a", "ap-south", true, "", "", 60 * day, false},
		{"edge-b", "eu-west", true, "", "", 5 * day, false},
		{"edge-b", "us-east", true, "", "", 60 * day, false},
		{"edge-b", "ap-south", false, "status", `body {"ce":1}`, 60 * day, false},
		{"edge-c", "eu-west", true, "", "", 5 * day, true},
		{"edge-c", "us-east", true, "", "", 5 * day, false},
		{"edge-d", "eu-west", true, "", "", 0, false},
		{"edge-d", "us-east", true, "", "", 0, false},
	} {
		for i := 0; i < 3; i++ {
			at := now.Add(-time.Duration(i) * 30 * time.Second)
			expires := at.Add(90 * time.Second).UnixNano()
			if v.expired {
				expires = now.Add(-time.Second).UnixNano()
			}
			state := "healthy"
			if !v.ok {
				state = "unhealthy"
			}
			fields := fmt.Sprintf("ok=%t,cause=%q,state=%q,expires=%di", v.ok, v.cause, state, expires)
			if v.target != "edge-d" {
				blob := fmt.Sprintf(`{"s":%q,"ok":%t,"c":%q,"e":%q,"d":[1,2,3,4,5,6,7],"st":1,"x":%d`, state, v.ok, v.cause, v.err, expires)
				if v.certIn > 0 {
					blob += fmt.Sprintf(`,"ce":%d`, now.Add(v.certIn).UnixNano())
				}
				fields += `,verdict_json="` + esc.Replace(blob+"}") + `"`
			}
			fmt.Fprintf(&sb, "vigil_verdict,check=web,region=%s,target=%s,tier=deep,vantage=%s-1 %s %d\n", v.region, v.target, v.region, fields, at.UnixNano())
		}
	}
	return sb.String()
}

// TestCertificateRule evaluates vigil-certificate in a real InfluxDB 1.8,
// as the alerter's cert_expiry rule judges: a check × target whose
// certificate expires within cert_expiry_days (14) or fails with cause
// cert in ≥ quorum (2) regions, on each region's latest unexpired
// verdicts; labelled rule=cert_expiry, severity=ticket and the tier, as
// the Prometheus rules' VigilCertificate. With the alerting config's
// cert_expiry_days 90 and quorum 1 (its default), edge-b's 60 days count
// too and edge-c fires in the one region whose verdict has not expired;
// cert.severity sets the label; cert.disabled drops the rule.
func TestCertificateRule(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	db.write(t, certLines(now))
	// edge-e: verdicts as the canary writes them, through the InfluxDB
	// store: the certificate expires in 3 days in two regions.
	store, err := influx.Open(influx.Config{URL: db.url, Bucket: "vigil/autogen"}, t.TempDir(), influx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var vs []reporting.Verdict
	for _, region := range []string{"eu-west", "us-east"} {
		vs = append(vs, reporting.Verdict{Check: "web", Target: "edge-e", Region: region, Vantage: region + "-1", Tier: "deep",
			State: reporting.StateHealthy, OK: true, At: now.Add(-10 * time.Second), Expires: now.Add(time.Minute),
			Interval: 30 * time.Second, CertExpiry: now.Add(72 * time.Hour)})
	}
	if err := store.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := store.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	eval := now.Add(time.Second)

	rule := provisionedRule(t, "vigil-certificate")
	got := firing(t, db, rule, eval)
	want := map[string]string{"web/edge-a/deep": "web × edge-a certificate expires within 14 days or fails verification in 2 regions",
		"web/edge-e/deep": "web × edge-e certificate expires within 14 days or fails verification in 2 regions"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("vigil-certificate firing %v, want %v", got, want)
	}
	labels, _ := rule["labels"].(map[string]any)
	if fmt.Sprint(labels) != "map[rule:cert_expiry severity:ticket source:grafana]" || rule["for"] != "0s" {
		t.Errorf("labels %v, for %v; want rule cert_expiry, severity ticket, source grafana and for 0s (the alerter's rule fires at once)", labels, rule["for"])
	}
	if _, ok := rule["keepFiringFor"]; ok {
		t.Errorf("keepFiringFor %v: cert_expiry has no hold", rule["keepFiringFor"])
	}

	cfg := vigilalerting.Config{CertExpiryDays: 90, Cert: vigilalerting.CertRule{Severity: "page"}}
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	raw, err := Options{Alerting: &cfg}.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	rule = ruleOf(t, raw, "vigil-certificate")
	got = firing(t, db, rule, eval)
	want = map[string]string{
		"web/edge-a/deep": "web × edge-a certificate expires within 90 days or fails verification in 3 regions",
		"web/edge-b/deep": "web × edge-b certificate expires within 90 days or fails verification in 3 regions",
		"web/edge-c/deep": "web × edge-c certificate expires within 90 days or fails verification in 1 region",
		"web/edge-e/deep": "web × edge-e certificate expires within 90 days or fails verification in 2 regions",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("cert_expiry_days 90: firing %v, want %v", got, want)
	}
	if labels, _ := rule["labels"].(map[string]any); labels["severity"] != "page" {
		t.Errorf("cert.severity page: labels %v", labels)
	}

	cfg.Cert.Disabled = true
	raw, err = Options{Alerting: &cfg}.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "vigil-certificate") {
		t.Error("cert.disabled: the rules still have vigil-certificate")
	}
}
