package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestYAMLErrorInLargeFileLocated: in a config of about 5,000 lines (1,240
// checks in block style), a key indented one space too little is reported
// at its own line and quoted, not at the start of the checks block, and
// within seconds: the line is found by bisecting on where the file is cut,
// not by parsing it once per line (which took about 30 s at 4,000 lines and
// gave up, naming the wrong line, past that). The bound is 5 s, or 100
// parses of the whole file where one takes longer than 50 ms (a race
// build, a loaded machine): the search takes about 15, one parse per line
// would take thousands.
func TestYAMLErrorInLargeFileLocated(t *testing.T) {
	const checks = 1240
	head := []string{
		"agent: {listen: 127.0.0.1:0}",
		"targets: [{name: a, url: http://127.0.0.1:1}]",
		"checks:",
	}
	item := func(i int) []string {
		return []string{
			fmt.Sprintf("  - name: c%d", i),
			"    targets: [a]",
			"    http: {path: /healthz}",
			"    interval: 30s",
		}
	}
	for _, at := range []int{checks, checks / 2, 1} {
		t.Run(fmt.Sprintf("after check %d", at), func(t *testing.T) {
			lines := append([]string(nil), head...)
			bad := 0
			for i := 1; i <= checks; i++ {
				lines = append(lines, item(i)...)
				if i == at {
					lines = append(lines, "   timeout: 2s")
					bad = len(lines)
				}
			}
			if len(lines) < 4900 {
				t.Fatalf("generated %d lines, want about 5000", len(lines))
			}
			cfg := writeConfig(t, strings.Join(lines, "\n")+"\n")
			start := time.Now()
			out, code := runCLI(t, "validate", "-c", cfg)
			took := time.Since(start)
			want := fmt.Sprintf("%s:%d:4: not valid YAML: the indentation does not match the list above (line it up with the keys of the item, or start a new item with \"- \")\n"+
				"  %d |    timeout: 2s\n"+
				"  %s |    ^", cfg, bad, bad, strings.Repeat(" ", len(fmt.Sprint(bad))))
			if code != 2 || strings.TrimRight(out, "\n") != want {
				t.Errorf("%d-line file: exit %d, output:\n%s\nwant exit 2 and %q", len(lines), code, out, want)
			}
			parseStart := time.Now()
			var tree any
			_ = yaml.Unmarshal([]byte(strings.Join(lines, "\n")+"\n"), &tree)
			limit := max(5*time.Second, 100*time.Since(parseStart))
			if took > limit {
				t.Errorf("%d-line file: validate took %s to locate the error, want under %s", len(lines), took.Round(time.Millisecond), limit.Round(time.Millisecond))
			}
		})
	}
}
