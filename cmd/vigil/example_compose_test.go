package main

import (
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestComposeExamplePublishesOnLoopback: the multi-region compose file
// publishes each port on the host's 127.0.0.1 only. Its InfluxDB has no
// authentication, so a port published on every interface would let anyone
// on the network write verdicts the proxy and the alerter act on.
func TestComposeExamplePublishesOnLoopback(t *testing.T) {
	b, err := os.ReadFile("../../examples/multi-region/docker-compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]struct {
			Ports []string `yaml:"ports"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, s := range f.Services {
		for _, p := range s.Ports {
			n++
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("service %s publishes %q on every interface of the host: write \"127.0.0.1:%s\"", name, p, p)
			}
		}
	}
	if n == 0 {
		t.Fatal("no published port found: the test reads the wrong structure")
	}
}
