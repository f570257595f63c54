package main

// foreignKeys are keys of other monitoring tools' configs (Prometheus
// blackbox_exporter, Gatus, Checkly) that users bring over, each with what
// vigil writes instead: an unknown key that is one of them says so rather
// than a bare "unknown key" (see keyHint). Keyed by the key in lower case.
var foreignKeys = map[string]string{
	// blackbox_exporter's http prober.
	"valid_status_codes":              "blackbox_exporter's valid_status_codes is the check's expect.status in vigil: expect: {status: [200, 204]}",
	"fail_if_body_not_matches_regexp": "blackbox_exporter's fail_if_body_not_matches_regexp is the check's expect.body.regex in vigil: expect: {body: {regex: [\"ok\"]}}",
	"fail_if_body_matches_regexp":     "blackbox_exporter's fail_if_body_matches_regexp is the check's expect.body.not_regex in vigil: expect: {body: {not_regex: [\"error\"]}}",
	"fail_if_header_not_matches":      "blackbox_exporter's fail_if_header_not_matches is the check's expect.headers in vigil: expect: {headers: {Content-Type: \"~json\"}}",
	"fail_if_header_matches":          "blackbox_exporter's fail_if_header_matches is the check's expect.not_headers in vigil: expect: {not_headers: {Server: \"~nginx/1\\\\.1\"}}",
	"no_follow_redirects":             "blackbox_exporter's no_follow_redirects: vigil follows no redirect unless http.follow_redirects is true",
	"tls_config":                      "blackbox_exporter's tls_config is the check's http.tls (or tls: for a tls check) in vigil",
	"bearer_token":                    "vigil sends a bearer token as a header: http: {headers: {Authorization: \"Bearer ${TOKEN}\"}}",
	"prober":                          "in vigil a check's kind is the section it has: http:, tcp:, tls:, dns:, grpc: or icmp:",
	// Gatus.
	"conditions": "Gatus's conditions are the check's expect in vigil: [STATUS] == 200 is expect: {status: 200}, [BODY].status == UP is expect: {json: [{path: status, equals: UP}]}, [RESPONSE_TIME] < 300 is expect: {duration: 300ms}",
	"endpoints":  "Gatus's endpoints are checks in vigil: checks: [{name: api, url: \"https://…\"}]",
	// Checkly.
	"assertions": "Checkly's assertions are the check's expect in vigil: expect: {status: 200, json: [{path: data.id, exists: true}]}",
	"request":    "Checkly's request is the check's url and http: in vigil: url: \"https://…\", http: {method: POST, headers: {…}, body: …}",
	"frequency":  "Checkly's frequency is interval in vigil, with a unit: interval: 5m",
}
