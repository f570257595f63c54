package alerting

import "testing"

// quorumLostAlert is the example's VigilQuorumLost for asset with n
// regions silent.
const quorumLostAlert = `
          - exp_labels: {alertname: VigilQuorumLost, check: asset, interval: 15s, rule: quorum_lost, severity: page, source: prometheus}
            exp_annotations:
              summary: 'asset: fewer regions report than alerting.quorum (2), 1 silent: down, ttfb, burn_rate and cert_expiry alerts for asset cannot fire until they report again'
              status_url: 'http://127.0.0.1:9470/check/asset'`

// TestPrometheusQuorumLost: in the example rules (quorum 2), the us canary
// of two dying pages with VigilQuorumLost, since VigilCheckDown can no
// longer reach its quorum; a third region still reporting keeps the quorum
// and nothing pages; the canary coming back resolves it.
func TestPrometheusQuorumLost(t *testing.T) {
	tests := alertTest("two regions, us dies and comes back", "VigilQuorumLost",
		canary{"c1", "eu", "1x200"}.checksTotal("0+4x200")+
			canary{"c2", "us", "1x60 0x60 1x80"}.checksTotal("0+4x60 stale _x58 240+4x80"),
		at(60), at(64, quorumLostAlert), at(110, quorumLostAlert), at(130)) +
		alertTest("three regions, us dies: still a quorum", "VigilQuorumLost",
			canary{"c1", "eu", "1x200"}.checksTotal("0+4x200")+
				canary{"c3", "ap", "1x200"}.checksTotal("0+4x200")+
				canary{"c2", "us", "1x60 0x140"}.checksTotal("0+4x60 stale"),
			at(64), at(110))
	promtoolTest(t, exampleRules, tests)
}
