package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestComingFromBlackboxTableHinted: every blackbox_exporter module key the
// README's "Coming from blackbox_exporter" table maps, written in a vigil
// check where a user would carry it over (under the prober's section, or
// under http: for a key the table names bare), is either a key vigil reads
// there too or an unknown key whose error says what vigil writes instead,
// never a bare "unknown key".
func TestComingFromBlackboxTableHinted(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "#### Coming from blackbox_exporter\n")
	if !ok {
		t.Fatal("README.md has no \"Coming from blackbox_exporter\" section")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	sections := map[string]string{ // a check of each prober, as vigil writes it
		"http": "url: http://127.0.0.1:9/", "tcp": "url: tcp://127.0.0.1:25", "dns": "url: dns://127.0.0.1:53",
		"icmp": "url: icmp://127.0.0.1", "grpc": "url: http://127.0.0.1:9",
	}
	keyRE := regexp.MustCompile("`([a-z_]+(?:\\.[a-z_]+)*)(?::[^`]*)?`")
	type place struct{ section, key string }
	var places []place
	seen := map[place]bool{}
	for _, row := range strings.Split(table, "\n")[2:] {
		cells := strings.Split(row, " | ")
		if len(cells) < 2 || strings.Contains(cells[0], "metrics") || strings.Contains(cells[0], "/probe") {
			continue
		}
		// A bare key after a dotted one is its sibling: "http.tls_config.ca_file",
		// "insecure_skip_verify" is http.tls_config.insecure_skip_verify.
		var prefix []string
		for _, m := range keyRE.FindAllStringSubmatch(cells[0], -1) {
			segs := strings.Split(m[1], ".")
			if len(segs) > 1 {
				prefix = segs[:len(segs)-1]
			} else {
				segs = append(slices.Clone(prefix), segs...)
			}
			section := "http"
			if _, ok := sections[segs[0]]; ok && len(segs) > 1 {
				section, segs = segs[0], segs[1:]
			}
			if segs[0] == "prober" {
				continue // prober: dns is a check with a dns: section
			}
			p := place{section, segs[0]}
			if !seen[p] {
				seen[p] = true
				places = append(places, p)
			}
		}
	}
	if len(places) < 30 {
		t.Fatalf("read %d keys from the README's table, want 30 or more: %v", len(places), places)
	}
	var cfg strings.Builder
	cfg.WriteString("checks:\n")
	idx := map[string]int{}
	for _, s := range []string{"http", "tcp", "dns", "icmp", "grpc"} {
		idx[s] = len(idx)
		fmt.Fprintf(&cfg, "  - name: %s\n    %s\n    %s:\n", s, sections[s], s)
		for _, p := range places {
			if p.section == s {
				fmt.Fprintf(&cfg, "      %s: x\n", p.key)
			}
		}
	}
	out, _ := validateOut(t, cfg.String())
	hinted := 0
	for _, p := range places {
		path := fmt.Sprintf("checks[%d].%s.%s: unknown key", idx[p.section], p.section, p.key)
		i := strings.Index(out, path)
		if i < 0 {
			continue // a key vigil reads there too
		}
		line, _, _ := strings.Cut(out[i:], "\n")
		if hint := foreignKeys[p.key]; hint == "" || !strings.Contains(line, "("+hint+")") {
			t.Errorf("blackbox_exporter's %s.%s (in the README's table): %s\nwant what vigil writes instead", p.section, p.key, line)
			continue
		}
		hinted++
	}
	if hinted < 10 {
		t.Errorf("%d of the table's keys were hinted, want 10 or more:\n%s", hinted, out)
	}
}

// TestForeignKeysCheckly: Checkly's check settings are hinted too, and the
// forms every new hint suggests are valid vigil.
func TestForeignKeysCheckly(t *testing.T) {
	out, code := validateOut(t, "checks:\n  - name: a\n    url: http://127.0.0.1:9/\n    degradedResponseTime: 3000\n    maxResponseTime: 10000\n    activated: false\n")
	for _, k := range []string{"degradedResponseTime", "maxResponseTime", "activated"} {
		want := "checks[0]." + k + ": unknown key (" + foreignKeys[strings.ToLower(k)] + ")"
		if code != 2 || foreignKeys[strings.ToLower(k)] == "" || !strings.Contains(out, want) {
			t.Errorf("Checkly's %s: exit %d, output:\n%s\nwant %q", k, code, out, want)
		}
	}
	out, code = validateOut(t, `checks:
  - name: a
    url: https://127.0.0.1:9/
    disabled: true
    timeout: 10s
    http: {ip_protocol: ip4, ip_protocol_fallback: true, http2: required}
    expect: {size: {max: 1MiB}, fail_if_ssl: true, duration: 3s}
  - name: d
    url: dns://127.0.0.1:53
    dns: {query_name: example.com, transport: tcp}
    expect: {rcode: [NOERROR, NXDOMAIN], answer: {regex: ["IN\tA\t"]}, authority: {regex: ["IN\tNS\t"]}, additional: {regex: ["IN\tA\t"]}}
  - name: d2
    url: dns://127.0.0.1:853
    dns: {query_name: example.com, transport: tcp-tls}
  - name: t
    url: tcp://127.0.0.1:25
    tcp: {query: [{expect: "~^220 "}, {send: "EHLO vigil\r\n"}]}
`)
	if code != 0 {
		t.Errorf("the suggested forms: exit %d:\n%s", code, out)
	}
}
