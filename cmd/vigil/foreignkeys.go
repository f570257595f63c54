package main

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

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

// alertmanagerKeys are keys of an Alertmanager config (its routing tree and
// receivers) that users write under vigil's alerting: or a receiver, each
// with what vigil writes instead. Keyed by the key in lower case.
var alertmanagerKeys = map[string]string{
	"route":             "Alertmanager's route: vigil routes by each receiver's own checks, tiers and severities: alerting: {receivers: [{name: ops, severities: [page], webhook: {url: \"https://…\"}}]}",
	"routes":            "Alertmanager's routes: vigil routes by each receiver's own checks, tiers and severities: receivers: [{name: ops, checks: [\"api*\"], webhook: {url: \"https://…\"}}]",
	"receiver":          "Alertmanager's receiver (a route's): vigil sends an alert to every receiver whose checks, tiers and severities match it",
	"group_by":          "group_by is a key of alerting, for every receiver: alerting: {group_by: [severity]} (labels rule, check, target, region, slo, severity)",
	"group_interval":    "group_interval is a key of alerting, for every receiver: alerting: {group_interval: 5m}",
	"inhibit_rules":     "vigil has no inhibit rules (Alertmanager's inhibit_rules): alerting.maintenance silences checks for a time, and an alertmanager receiver hands alerts to an Alertmanager that has them",
	"webhook_configs":   "Alertmanager's webhook_configs is a receiver's webhook in vigil, one per receiver: receivers: [{name: ops, webhook: {url: \"https://…\"}}]",
	"slack_configs":     "Alertmanager's slack_configs is a receiver's slack in vigil, one per receiver: receivers: [{name: chat, slack: {url: \"${SLACK_WEBHOOK_URL}\"}}]",
	"pagerduty_configs": "Alertmanager's pagerduty_configs is a receiver's pagerduty in vigil, one per receiver: receivers: [{name: pd, pagerduty: {routing_key: \"${PD_KEY}\"}}]",
}

// scratchKeyHint is the hint for a top-level key that starts "x-", the
// docker-compose habit of a scratch key that holds anchors: vigil has none.
const scratchKeyHint = "vigil has no scratch key to keep anchors in, as docker-compose's x-…: put the anchor on the first entry that uses it (- &web {name: home, …}, then - {<<: *web, name: api}), or put shared check settings under defaults:"

// foreignKeyHint is what follows "unknown key" for an unknown key that is
// another tool's (key is the decoder path, split at "."): a key of
// blackbox_exporter, Gatus or Checkly (foreignKeys) in a check or defaults
// (Gatus's endpoints at the top level), an Alertmanager key
// (alertmanagerKeys) under alerting, or a docker-compose scratch key
// (x-…) at the top level. "" for any other key.
func foreignKeyHint(segs []string) string {
	last := strings.ToLower(segs[len(segs)-1])
	root, _, _ := strings.Cut(strings.ToLower(segs[0]), "[")
	top := len(segs) == 1
	switch {
	case top && strings.HasPrefix(last, "x-"):
		return " (" + scratchKeyHint + ")"
	case !top && root == "alerting" && alertmanagerKeys[last] != "":
		return " (" + alertmanagerKeys[last] + ")"
	}
	if hint, ok := foreignKeys[last]; ok && top == (root == "endpoints") && (top || root == "checks" || root == "defaults") {
		return " (" + hint + ")"
	}
	return ""
}

// durationWords reads a duration written in words ("5 minutes", "30 sec",
// "1 hour"), as other tools' configs and people write it.
var durationWords = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*(ms|milliseconds?|msecs?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)$`)

// durationWeeks reads a duration in weeks ("1w", "2 weeks"), which Go's
// durations do not have.
var durationWeeks = regexp.MustCompile(`^(\d{1,4})\s*(w|wks?|weeks?)$`)

// durationHint is what follows `"5 minutes": not a duration` for a duration
// written in words: ` (write 5m)`; "" for anything else.
func durationHint(s string) string {
	lower := strings.ToLower(strings.TrimSpace(s))
	if w := durationWeeks.FindStringSubmatch(lower); w != nil {
		n, _ := strconv.Atoi(w[1])
		return " (write " + strconv.Itoa(7*n) + "d)"
	}
	m := durationWords.FindStringSubmatch(lower)
	if m == nil || !strings.ContainsAny(s, " \t") && len(m[2]) <= 2 && strings.TrimSpace(s) == lower {
		return "" // "5m" parses; a bare "5" gets its own hint
	}
	unit := m[2]
	switch {
	case strings.HasPrefix(unit, "ms") || strings.HasPrefix(unit, "milli"):
		unit = "ms"
	default:
		unit = unit[:1]
	}
	return " (write " + m[1] + unit + ")"
}

// higherKeyHint is what follows "unknown key" for a key written one level
// too high (an http.path dedented to the check, "checks[0].path"; expect:
// at the top level): the mappings just below that take it, " (path is a key
// of checks[0].http: indent it under http:)". t is the type of the mapping
// the key is in (File at the top level); "" when no mapping below takes it.
func higherKeyHint(segs []string, t reflect.Type) string {
	last := strings.ToLower(segs[len(segs)-1])
	fields, ok := fieldsOf(t)
	if !ok {
		return ""
	}
	parent := strings.Join(segs[:len(segs)-1], ".")
	var under []string
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		ft, elem := fields[name], ""
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if k := ft.Kind(); k == reflect.Slice || k == reflect.Array {
			ft, elem = ft.Elem(), "[…]"
		}
		sub, ok := fieldsOf(ft)
		if !ok {
			continue
		}
		if _, ok := sub[last]; ok {
			path := name + elem
			if parent != "" {
				path = parent + "." + path
			}
			under = append(under, path)
		}
	}
	if len(under) == 0 {
		return ""
	}
	where := strings.Join(under, " or ")
	if parent == "" {
		parent = "the top level"
	}
	_, name, _ := strings.Cut("."+under[0], ".")
	if i := strings.LastIndex(name, "."); i >= 0 {
		name = name[i+1:]
	}
	name = strings.TrimSuffix(name, "[…]")
	return fmt.Sprintf(" (%s is a key of %s, not of %s: indent it under %s:)", last, where, parent, name)
}
