package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMalformedURLHidesPassword: a URL with a typo in its scheme (which
// url.Parse reads as a path, not a URL with a host) is quoted by validate,
// check and proxy --verdicts-from with its password hidden, and the "no
// scheme" hint writes the mistyped scheme right instead of adding a second
// one.
func TestMalformedURLHidesPassword(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(path, []byte(`targets: [{name: t1, url: "http//u:litpwA1@127.0.0.1:8080/"}]
checks:
  - {name: c1, targets: [t1], http: {}}
  - {name: c2, url: "https//u:litpwA2@127.0.0.1/", http: {}}
  - {name: c3, url: "http://127.0.0.1:1/", http: {url: "http:/u:litpwA3@127.0.0.1/"}}
  - {name: c4, url: "http://127.0.0.1:1/", http: {url: "htp://u:litpwA4@127.0.0.1/"}}
  - {name: c5, url: "http:u:litpwA5@127.0.0.1:8080/x?k=s3cretq", http: {}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []string{
		path + `:1:22: targets[0].url: "http//u:…@127.0.0.1:8080/": no scheme: write it as http://u:…@127.0.0.1:8080/`,
		path + `:4:16: checks[1].url: "https//u:…@127.0.0.1/": no scheme: write it as https://u:…@127.0.0.1/`,
		path + `:5:51: checks[2].http.url: "http:/u:…@127.0.0.1/": want an absolute http:// or https:// URL`,
		path + `:6:51: checks[3].http.url: "htp://127.0.0.1/": want an absolute http:// or https:// URL`,
		path + `:7:16: checks[4].url: "http:u:…@127.0.0.1:8080/x?k=…": no scheme: write it as http://u:…@127.0.0.1:8080/x?k=…`,
	}
	for _, cmd := range []string{"validate", "check"} {
		t.Run(cmd, func(t *testing.T) {
			out, code := runCLI(t, cmd, "-c", path)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			for _, w := range want {
				if !strings.Contains(out, w+"\n") && !strings.HasSuffix(out, w) {
					t.Errorf("output lacks the line\n%s\ngot:\n%s", w, out)
				}
			}
			for _, sec := range []string{"litpw", "s3cretq"} {
				if strings.Contains(out, sec) {
					t.Errorf("output shows %q:\n%s", sec, out)
				}
			}
		})
	}

	t.Run("proxy --verdicts-from", func(t *testing.T) {
		for in, want := range map[string]string{
			"ftp://vfu:vfpwC2@127.0.0.1:1/": `--verdicts-from: "ftp://127.0.0.1:1/": want an http(s) URL of a canary`,
			"http//vfu:vfpwC3@127.0.0.1:1/": `--verdicts-from: "http//vfu:…@127.0.0.1:1/": want an http(s) URL of a canary`,
		} {
			out, code := runCLI(t, "proxy", "-c", path, "--verdicts-from", in)
			if code != 2 || !strings.Contains(out, want) || strings.Contains(out, "vfpw") {
				t.Errorf("--verdicts-from %s: exit %d, output %q; want 2 and %q", in, code, out, want)
			}
		}
	})
}

// TestURLPasswordEchoedHidden: a password written in a target URL (and in
// a check's url and http.url) is sent as an Authorization: Basic header;
// an origin that echoes the header makes a json assertion fail with it as
// got, which `vigil check` shows as "Basic ***", not as the base64 of
// user:password, and a password echoed as written shows as *** too.
func TestURLPasswordEchoedHidden(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pw, _ := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"hdr": r.Header.Get("Authorization"), "pw": pw})
	}))
	defer origin.Close()
	host := strings.TrimPrefix(origin.URL, "http://")
	path := filepath.Join(t.TempDir(), "vigil.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`targets: [{name: t1, url: "http://tuser:tpass12345@%[1]s"}]
checks:
  - {name: target, targets: [t1], http: {path: /echo}, expect: {json: [{path: hdr, equals: 1}, {path: pw, equals: 1}]}}
  - {name: url, url: "http://cuser:cpass67890@%[1]s", http: {}, expect: {json: [{path: hdr, equals: 1}, {path: pw, equals: 1}]}}
  - {name: httpurl, url: "http://%[1]s", http: {url: "http://huser:hpass13579@%[1]s/x"}, expect: {json: [{path: hdr, equals: 1}, {path: pw, equals: 1}]}}
`, host)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := runCLI(t, "check", "-c", path, "--json")
	if code != 1 {
		t.Errorf("exit %d, want 1 (the assertions fail)", code)
	}
	for _, want := range []string{`{"name":"json hdr","ok":false,"got":"\"Basic ***\"","want":"1"}`,
		`{"name":"json pw","ok":false,"got":"\"***\"","want":"1"}`} {
		if n := strings.Count(out, want); n != 3 {
			t.Errorf("%d checks show %s, want 3:\n%s", n, want, out)
		}
	}
	for _, sec := range []string{"tpass12345", "cpass67890", "hpass13579",
		base64.StdEncoding.EncodeToString([]byte("tuser:tpass12345")),
		base64.StdEncoding.EncodeToString([]byte("cuser:cpass67890")),
		base64.StdEncoding.EncodeToString([]byte("huser:hpass13579"))} {
		if strings.Contains(out, sec) {
			t.Errorf("vigil check shows %q:\n%s", sec, out)
		}
	}
}

// TestLatin1EchoedSecretHidden: an origin that reads header bytes as
// ISO-8859-1 (Python's http.server, WSGI, Java servlets) echoes a
// non-ASCII ${…} secret as the Latin-1 reading of its UTF-8 bytes, and
// Python's json module writes that as \u00c3\u00a4…: `vigil check` shows
// it as ***, in an echoed header list (a JSON subtree quoted as got) and
// as a string value.
func TestLatin1EchoedSecretHidden(t *testing.T) {
	const secret = "pässwörd-secret"
	t.Setenv("VIGIL_TEST_L1", secret)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := r.Header.Get("X-K")
		var l1 []rune // the bytes read as Latin-1
		for i := 0; i < len(raw); i++ {
			l1 = append(l1, rune(raw[i]))
		}
		// As Python's json.dumps writes it (ensure_ascii).
		var esc strings.Builder
		for _, c := range l1 {
			if c < 0x80 {
				esc.WriteRune(c)
			} else {
				fmt.Fprintf(&esc, `\u%04x`, c)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"hdr": [["X-K", "%s"]], "k": "%s"}`, esc.String(), esc.String())
	}))
	defer origin.Close()
	path := filepath.Join(t.TempDir(), "vigil.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`checks:
  - {name: l1, url: %q, http: {headers: {X-K: "${VIGIL_TEST_L1}"}}, expect: {json: [{path: hdr, equals: 1}, {path: k, equals: 1}]}}
`, origin.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := runCLI(t, "check", "-c", path, "--json")
	if code != 1 {
		t.Errorf("exit %d, want 1 (the assertions fail)", code)
	}
	for _, want := range []string{`{"name":"json hdr","ok":false,"got":"[[\"X-K\", \"***\"]]","want":"1"}`,
		`{"name":"json k","ok":false,"got":"\"***\"","want":"1"}`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	for _, leak := range []string{"ssw", "\\u00c3", "Ã"} {
		if strings.Contains(out, leak) {
			t.Errorf("output shows %q:\n%s", leak, out)
		}
	}
}
