package alerting

import (
	"strings"
	"testing"
)

// TestPlainHTTPCredentialWarnings: every receiver kind that would send a
// credential over plain http to a host that is not loopback gets one
// warning naming its url key, what travels (never its value) and what
// to do: Alertmanager and webhook user info, a webhook's query token and
// headers, PagerDuty's routing_key, a Slack webhook URL (its path is the
// secret). https, loopback hosts, and an http receiver that carries no
// credential (a bare Alertmanager, a bare webhook) get none.
func TestPlainHTTPCredentialWarnings(t *testing.T) {
	const advice = " unencrypted to %s; use https, or a loopback address for a receiver on this host"
	for _, tc := range []struct {
		name string
		r    Receiver
		want string // "" no warning
	}{
		{"alertmanager userinfo", Receiver{Alertmanager: &AlertmanagerConfig{URL: "http://amuser:AmPassword1@am.example.com:9093/"}},
			"receivers[0].alertmanager.url: http, not https: its user and password (the URL's user info, sent as basic auth) travel unencrypted to am.example.com"},
		{"alertmanager user only", Receiver{Alertmanager: &AlertmanagerConfig{URL: "http://amuser@am.example.com:9093"}},
			"receivers[0].alertmanager.url: http, not https: its user name (the URL's user info, sent as basic auth) travels unencrypted to am.example.com"},
		{"alertmanager query", Receiver{Alertmanager: &AlertmanagerConfig{URL: "http://am.example.com:9093/?token=AmPassword1"}},
			"receivers[0].alertmanager.url: http, not https: its query string (a token in it) travels unencrypted to am.example.com"},
		{"alertmanager bare", Receiver{Alertmanager: &AlertmanagerConfig{URL: "http://am.example.com:9093"}}, ""},
		{"alertmanager https", Receiver{Alertmanager: &AlertmanagerConfig{URL: "https://amuser:AmPassword1@am.example.com:9093"}}, ""},
		{"alertmanager loopback", Receiver{Alertmanager: &AlertmanagerConfig{URL: "http://amuser:AmPassword1@127.0.0.1:9093"}}, ""},
		{"alertmanager localhost", Receiver{Alertmanager: &AlertmanagerConfig{URL: "http://amuser:AmPassword1@localhost:9093"}}, ""},
		{"alertmanager ::1", Receiver{Alertmanager: &AlertmanagerConfig{URL: "http://amuser:AmPassword1@[::1]:9093"}}, ""},
		{"pagerduty http", Receiver{PagerDuty: &PagerDutyConfig{RoutingKey: "PdKey12345", URL: "http://pd.example.com/v2/enqueue"}},
			"receivers[0].pagerduty.url: http, not https: its routing_key travels unencrypted to pd.example.com"},
		{"pagerduty default", Receiver{PagerDuty: &PagerDutyConfig{RoutingKey: "PdKey12345"}}, ""},
		{"pagerduty loopback", Receiver{PagerDuty: &PagerDutyConfig{RoutingKey: "PdKey12345", URL: "http://127.0.0.1:8080/v2/enqueue"}}, ""},
		{"slack http", Receiver{Slack: &SlackConfig{URL: "http://hooks.slack.example/services/T0/B0/SlackSecret9"}},
			"receivers[0].slack.url: http, not https: its URL path (a Slack webhook's path is its secret) travels unencrypted to hooks.slack.example"},
		{"slack https", Receiver{Slack: &SlackConfig{URL: "https://hooks.slack.example/services/T0/B0/SlackSecret9"}}, ""},
		{"webhook userinfo", Receiver{Webhook: &WebhookConfig{URL: "http://hookuser:HookPass7@hooks.example.com/x"}},
			"receivers[0].webhook.url: http, not https: its user and password (the URL's user info, sent as basic auth) travel unencrypted to hooks.example.com"},
		{"webhook query token", Receiver{Webhook: &WebhookConfig{URL: "http://hooks.example.com/x?token=HookTok3n"}},
			"receivers[0].webhook.url: http, not https: its query string (a token in it) travels unencrypted to hooks.example.com"},
		{"webhook bare token query", Receiver{Webhook: &WebhookConfig{URL: "http://hooks.example.com/x?HookTok3n"}},
			"receivers[0].webhook.url: http, not https: its query string (a token in it) travels unencrypted to hooks.example.com"},
		{"webhook everything", Receiver{Webhook: &WebhookConfig{URL: "HTTP://hookuser:HookPass7@hooks.example.com/x?token=HookTok3n",
			Headers: map[string]Secret{"X-Token": "HdrTok3n", "Authorization": "Bearer HdrTok3n"}}},
			"receivers[0].webhook.url: http, not https: its user and password (the URL's user info, sent as basic auth), query string (a token in it) and headers (Authorization, X-Token) travel unencrypted to hooks.example.com"},
		{"webhook headers", Receiver{Webhook: &WebhookConfig{URL: "http://hooks.example.com/x", Headers: map[string]Secret{"Authorization": "Bearer HdrTok3n"}}},
			"receivers[0].webhook.url: http, not https: its headers (Authorization) travel unencrypted to hooks.example.com"},
		{"webhook bare", Receiver{Webhook: &WebhookConfig{URL: "http://hooks.example.com/x"}}, ""},
		{"webhook loopback", Receiver{Webhook: &WebhookConfig{URL: "http://hookuser:HookPass7@127.0.0.1:9/x?token=HookTok3n"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			r.Name = "r"
			c := Config{Receivers: []Receiver{r}}
			if err := c.ValidateAndSetDefaults(); err != nil {
				t.Fatalf("validate: %v", err)
			}
			ws := c.Warnings()
			if tc.want == "" {
				if len(ws) != 0 {
					t.Fatalf("want no warning, got %q", ws)
				}
				return
			}
			host := tc.want[strings.LastIndex(tc.want, " ")+1:]
			want := strings.Replace(tc.want, " unencrypted to "+host, "", 1) + strings.Replace(advice, "%s", host, 1)
			if len(ws) != 1 || ws[0] != want {
				t.Fatalf("warnings:\n%q\nwant:\n%q", ws, want)
			}
			for _, secret := range []string{"AmPassword1", "PdKey12345", "SlackSecret9", "HookPass7", "HookTok3n", "HdrTok3n", "/services/"} {
				if strings.Contains(ws[0], secret) {
					t.Errorf("the warning shows %q: %s", secret, ws[0])
				}
			}
		})
	}
}
