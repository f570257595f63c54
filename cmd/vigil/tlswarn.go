package main

import "fmt"

// tlsWarnings lists the TLS settings of the file's checks that weaken
// them — insecure_skip_verify: true, a min_version below 1.2 — each naming
// its key: "checks[2].http.tls.insecure_skip_verify: true: certificates
// are not verified". They are warnings, not errors: a check of a test
// origin with a self-signed certificate is a deliberate choice, but one
// that must not go unnoticed. `vigil validate` prints them, `vigil run`
// logs them when it loads the file.
func tlsWarnings(f *File) []string {
	var out []string
	add := func(key string, ws []string) {
		for _, w := range ws {
			out = append(out, key+"."+w)
		}
	}
	for i := range f.Checks {
		c := &f.Checks[i]
		if c.HTTP != nil {
			add(fmt.Sprintf("checks[%d].http", i), c.HTTP.Warnings())
		}
		if c.DNS != nil {
			add(fmt.Sprintf("checks[%d].dns", i), c.DNS.Warnings())
		}
		if c.TLS != nil {
			add(fmt.Sprintf("checks[%d].tls", i), c.TLS.Warnings())
		}
		if c.TCP != nil {
			add(fmt.Sprintf("checks[%d].tcp", i), c.TCP.Warnings())
		}
		if c.GRPC != nil {
			add(fmt.Sprintf("checks[%d].grpc", i), c.GRPC.Warnings())
		}
		for j, s := range c.Script {
			if s.HTTP != nil {
				add(fmt.Sprintf("checks[%d].script[%d].http", i, j), s.HTTP.Warnings())
			}
		}
	}
	return out
}
