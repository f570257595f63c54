package main

import (
	"strings"
	"testing"
)

// TestForeignVariableSyntaxWarned: Checkly's and Postman's {{name}} and a
// shell's $NAME in a request field (url, headers, json, body, query, form
// of a check and of a script's http step) are sent as written; validate
// accepts the file (exit 0) but warns, naming the key and the vigil form.
// A $ where it is at home is left alone: a regex in expect, a JSONPath in
// extract, a price, a GraphQL query's variables, OData's $filter in a
// URL, vigil's own ${NAME} and $${. A credential's literal part stays
// hidden in the quoted value.
func TestForeignVariableSyntaxWarned(t *testing.T) {
	path := writeConfig(t, `checks:
  - name: login
    url: "http://127.0.0.1:9/login?$filter=x&$top=5"
    http:
      method: POST
      headers: {Authorization: "Bearer {{token}}", X-Trace: "$${literal}"}
      json: {user: bob, password: "{{DEMO_PASSWORD}}", price: "$5", q: "query($id: ID!) { u(id: $id) }"}
    expect:
      body: {regex: "^\\$[a-z]+"}
  - name: api
    url: "http://127.0.0.1:9/api"
    http:
      headers:
        Authorization: "Bearer $API_TOKEN"
        X-Api-Key: "{{key}}-LiteralKey4711"
      query: {q: "{{ term }}", home: "${HOME:-x}"}
      form: {a: "$FORM_A"}
  - name: s
    url: http://127.0.0.1:9/
    script:
      - http: {path: "/x", body: "a=$FOO&b=${env:HOME}"}
        extract: {id: {json: "$.id"}}
        expect: {body: {regex: "\\$[A-Z]+"}}
      - http: {path: "/y/${id}/{{id}}"}
`)
	out, code := runCLI(t, "validate", "-c", path)
	w := "warning: " + path
	want := "ok\n" +
		w + `:6:17: checks[0].http.headers.Authorization: "Bearer {{token}}" looks like a Checkly/Postman variable: vigil writes ${token} (or ${env:token} for the environment)` + "\n" +
		w + `:7:25: checks[0].http.json.password: "{{DEMO_PASSWORD}}" looks like a Checkly/Postman variable: vigil writes ${DEMO_PASSWORD} (or ${env:DEMO_PASSWORD} for the environment)` + "\n" +
		w + `:14: checks[1].http.headers.Authorization: "Bearer $API_TOKEN" looks like a shell variable: vigil writes ${API_TOKEN} (or ${env:API_TOKEN} for the environment)` + "\n" +
		w + `:15: checks[1].http.headers.X-Api-Key: "{{key}}***" looks like a Checkly/Postman variable: vigil writes ${key} (or ${env:key} for the environment)` + "\n" +
		w + `:16:15: checks[1].http.query.q: "{{ term }}" looks like a Checkly/Postman variable: vigil writes ${term} (or ${env:term} for the environment)` + "\n" +
		w + `:17:14: checks[1].http.form.a: "$FORM_A" looks like a shell variable: vigil writes ${FORM_A} (or ${env:FORM_A} for the environment)` + "\n" +
		w + `:21:28: checks[2].script[0].http.body: "a=$FOO&b=${env:HOME}" looks like a shell variable: vigil writes ${FOO} (or ${env:FOO} for the environment)` + "\n" +
		w + `:24:16: checks[2].script[1].http.path: "/y/${id}/{{id}}" looks like a Checkly/Postman variable: vigil writes ${id} (or ${env:id} for the environment)` + "\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, output:\n%s\nwant exit 0 and:\n%s", code, out, want)
	}
	if strings.Contains(out, "LiteralKey4711") {
		t.Fatalf("a literal credential is shown:\n%s", out)
	}
}
