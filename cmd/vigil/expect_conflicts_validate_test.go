package main

import "testing"

// vigil validate rejects assertions no answer can pass, naming the key
// path, and an empty header matcher, saying how to write what it meant.
func TestValidateExpectConflicts(t *testing.T) {
	wantValidate(t, `
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks:
  - {name: body, targets: [a], expect: {body: {contains: ["ok"], not_contains: ["ok"]}}}
  - {name: json, targets: [a], expect: {json: [{path: count, equals: 1}, {path: count, equals: 2}]}}
  - {name: hdr, targets: [a], expect: {headers: {X-A: ""}}}
  - {name: fine, targets: [a], expect: {body: {contains: ["ok"], not_contains: ["error"]}, json: [{path: n, gte: 1}, {path: n, lte: 5}], headers: {X-A: present}}}
`,
		`checks[0].expect.body: "ok" is in both contains and not_contains: no answer can pass`,
		`checks[1].expect.json[1].equals: "count" cannot equal both 1 (json[0]) and 2: no answer can pass`,
		`checks[2].expect.headers.X-A: empty value: write present for any value, or "~^$" for an empty one`)
}
