package statuspage

import (
	"io/fs"
	"net/url"
	"strings"
	"testing"
)

// FuzzPaths checks the two path guards: an artifact path never leaves the
// artifacts directory and a redirect target never leaves the site.
func FuzzPaths(f *testing.F) {
	for _, s := range []string{"shots/a.png", "../x.png", "/etc/passwd", "//evil/x", "/\\evil", "a/./b.png", "./a.PNG", "%2e%2e/x.png", "/check/a?window=1h", "\x00.png"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if a := cleanArtifact(s); a != "" {
			if !fs.ValidPath(a) || strings.HasPrefix(a, "/") || strings.Contains(a, "\\") {
				t.Fatalf("cleanArtifact(%q) = %q escapes", s, a)
			}
			for _, seg := range strings.Split(a, "/") {
				if seg == ".." {
					t.Fatalf("cleanArtifact(%q) = %q has ..", s, a)
				}
			}
		}
		l := localPath(s)
		u, err := url.Parse(l)
		if !strings.HasPrefix(l, "/") || strings.HasPrefix(l, "//") || strings.ContainsAny(l, "\\\r\n") || (err == nil && u.Host != "") {
			t.Fatalf("localPath(%q) = %q leaves the site", s, l)
		}
	})
}
