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
	"preferred_ip_protocol":           "blackbox_exporter's preferred_ip_protocol is ip_protocol under the check's http:, tcp:, tls:, dns:, grpc: or icmp: in vigil: http: {ip_protocol: ip4} (ip_protocol_fallback: true to fall back to the other family); without it vigil dials both families, IPv6 first",
	"body_size_limit":                 "blackbox_exporter's body_size_limit is the check's expect.size.max in vigil: expect: {size: {max: 1MiB}} (a longer body fails); http.body_limit only stops reading",
	"valid_http_versions":             "blackbox_exporter's valid_http_versions: vigil speaks HTTP/1.1 unless http.http2 is set; http: {http2: required} fails a run whose answer did not come over HTTP/2",
	"http_config":                     "blackbox_exporter's http_config settings are keys of the check's http: in vigil: http: {proxy_url: …, tls: {…}, basic_auth: {…}}",
	"fail_if_ssl":                     "blackbox_exporter's fail_if_ssl is the check's expect.fail_if_ssl in vigil: expect: {fail_if_ssl: true}",
	"fail_if_not_ssl":                 "blackbox_exporter's fail_if_not_ssl is the check's expect.fail_if_not_ssl in vigil: expect: {fail_if_not_ssl: true}",
	"query_response":                  "blackbox_exporter's query_response is the check's tcp.query in vigil: tcp: {query: [{expect: \"~^220 \"}, {send: \"EHLO vigil\\r\\n\"}]}",
	"valid_rcodes":                    "blackbox_exporter's valid_rcodes is the check's expect.rcode in vigil: expect: {rcode: [NOERROR, NXDOMAIN]}",
	"transport_protocol":              "blackbox_exporter's transport_protocol is the check's dns.transport in vigil: dns: {transport: tcp} (udp, tcp or tcp-tls)",
	"dns_over_tls":                    "blackbox_exporter's dns_over_tls is dns.transport: tcp-tls in vigil: dns: {transport: tcp-tls}",
	"validate_answer_rrs":             "blackbox_exporter's validate_answer_rrs is the check's expect.answer in vigil: expect: {answer: {regex: [\"IN\\tA\\t\"]}}",
	"validate_authority_rrs":          "blackbox_exporter's validate_authority_rrs is the check's expect.authority in vigil: expect: {authority: {regex: [\"IN\\tNS\\t\"]}}",
	"validate_additional_rrs":         "blackbox_exporter's validate_additional_rrs is the check's expect.additional in vigil: expect: {additional: {regex: [\"IN\\tA\\t\"]}}",
	"fail_if_matches_regexp":          "blackbox_exporter's fail_if_matches_regexp is not_regex in vigil's expect.answer (authority, additional)",
	"fail_if_not_matches_regexp":      "blackbox_exporter's fail_if_not_matches_regexp is all_regex in vigil's expect.answer (authority, additional)",
	"fail_if_all_match_regexp":        "blackbox_exporter's fail_if_all_match_regexp is all_regex in vigil's expect.answer (authority, additional) to keep the module's behaviour (not_all_regex does what its name says; see the README's blackbox_exporter table)",
	"fail_if_none_matches_regexp":     "blackbox_exporter's fail_if_none_matches_regexp is regex in vigil's expect.answer (authority, additional), with its regexes as one alternative a|b",
	"source_ip_address":               "vigil has no source address setting (blackbox_exporter's source_ip_address): the system picks the source address",
	// Gatus.
	"conditions": "Gatus's conditions are the check's expect in vigil: [STATUS] == 200 is expect: {status: 200}, [BODY].status == UP is expect: {json: [{path: status, equals: UP}]}, [RESPONSE_TIME] < 300 is expect: {duration: 300ms}",
	"endpoints":  "Gatus's endpoints are checks in vigil: checks: [{name: api, url: \"https://…\"}]",
	// Checkly.
	"assertions":           "Checkly's assertions are the check's expect in vigil: expect: {status: 200, json: [{path: data.id, exists: true}]}",
	"request":              "Checkly's request is the check's url and http: in vigil: url: \"https://…\", http: {method: POST, headers: {…}, body: …}",
	"frequency":            "Checkly's frequency is interval in vigil, with a unit: interval: 5m",
	"degradedresponsetime": "Checkly's degradedResponseTime is the check's expect.ttfb or expect.duration in vigil (a slower run is degraded, not down): expect: {duration: 3s}",
	"maxresponsetime":      "Checkly's maxResponseTime is the check's timeout in vigil, with a unit: timeout: 10s",
	"activated":            "Checkly's activated: false is disabled: true in vigil",
	"locations":            "Checkly's locations are agents in vigil: run one per location with agent.region set (see Several regions in the README)",
}
