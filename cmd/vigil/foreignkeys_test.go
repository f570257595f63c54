package main

import "testing"

// TestForeignKeysHinted: keys of blackbox_exporter, Gatus and Checkly
// configs are unknown keys whose error says what vigil writes instead, in
// a check (and Gatus's endpoints at the top level); elsewhere such a name
// is a bare unknown key.
func TestForeignKeysHinted(t *testing.T) {
	wantValidate(t, `endpoints: []
checks:
  - name: a
    url: http://127.0.0.1:9/
    conditions: ["[STATUS] == 200"]
    http:
      valid_status_codes: [200]
      fail_if_body_not_matches_regexp: ["ok"]
    expect:
      fail_if_body_matches_regexp: ["err"]
    assertions: []
    frequency: 5
alerting:
  conditions: x
`,
		`endpoints: unknown key (Gatus's endpoints are checks in vigil: checks: [{name: api, url: "https://…"}])`,
		`checks[0].conditions: unknown key (Gatus's conditions are the check's expect in vigil: [STATUS] == 200 is expect: {status: 200}, [BODY].status == UP is expect: {json: [{path: status, equals: UP}]}, [RESPONSE_TIME] < 300 is expect: {duration: 300ms})`,
		`checks[0].http.valid_status_codes: unknown key (blackbox_exporter's valid_status_codes is the check's expect.status in vigil: expect: {status: [200, 204]})`,
		`checks[0].http.fail_if_body_not_matches_regexp: unknown key (blackbox_exporter's fail_if_body_not_matches_regexp is the check's expect.body.regex in vigil: expect: {body: {regex: ["ok"]}})`,
		`checks[0].expect.fail_if_body_matches_regexp: unknown key (blackbox_exporter's fail_if_body_matches_regexp is the check's expect.body.not_regex in vigil: expect: {body: {not_regex: ["error"]}})`,
		`checks[0].assertions: unknown key (Checkly's assertions are the check's expect in vigil: expect: {status: 200, json: [{path: data.id, exists: true}]})`,
		`checks[0].frequency: unknown key (Checkly's frequency is interval in vigil, with a unit: interval: 5m)`,
		`alerting.conditions: unknown key`)

	// The forms the hints suggest are valid.
	out, code := validateOut(t, `checks:
  - name: a
    url: http://127.0.0.1:9/
    interval: 5m
    http: {method: POST, headers: {Authorization: "Bearer ${TOKEN:-x}"}, follow_redirects: true, tls: {}}
    expect: {status: [200, 204], body: {regex: ["ok"], not_regex: ["error"]}, headers: {Content-Type: "~json"}, not_headers: {Server: "~nginx/1\\.1"}, duration: 300ms, json: [{path: status, equals: UP}, {path: data.id, exists: true}]}
`)
	if code != 0 {
		t.Fatalf("the suggested forms: exit %d:\n%s", code, out)
	}
}
