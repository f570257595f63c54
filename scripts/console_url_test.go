package scripts

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// A console error or an uncaught exception that quotes a URL (a failed
// API call's, an OAuth callback's) shows it as every URL vigil shows:
// without userinfo, query values as "…", no fragment. That holds in the
// no_console_errors failure (the run's error: API, status page, alerts)
// and in the failure screenshot's note. The rest of the text stays.
func TestBrowserConsoleErrorURLsHideQueryValues(t *testing.T) {
	b := needChromium(t)
	o := htmlPages(t, map[string]string{"/app": `<!doctype html><title>app</title><script>
console.error("fetch failed: https://api.example/v1/me?access_token=CONSOLESECRET1&x=2 (401).");
setTimeout(() => { throw new Error("callback http://ann:PWSECRET2@idp.example/cb?code=CODESECRET3#FRAGSECRET4 rejected"); }, 0);
</script>`})
	dir := t.TempDir()
	res := browserRunner(t, b, dir, `
- browser: {navigate: /app}
- browser: {sleep: 200ms}
- browser: {no_console_errors: true}
`, 20*time.Second).Run(context.Background(), checks.Target{Name: "local", URL: o.URL})
	if res.OK || len(res.Artifacts) != 1 {
		t.Fatalf("want the no_console_errors step to fail with a screenshot: %s: %s %v", res.Cause, res.Err, res.Artifacts)
	}
	note, err := os.ReadFile(filepath.Join(ArtifactsDir(dir), strings.TrimSuffix(res.Artifacts[0], ".png")+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var info failureInfo
	if err := json.Unmarshal(note, &info); err != nil {
		t.Fatal(err)
	}
	all := res.Err + "\n" + strings.Join(info.ConsoleErrors, "\n") + "\n" + info.Error
	for _, a := range res.Assertions {
		all += "\n" + a.Got
	}
	for _, s := range []string{"CONSOLESECRET1", "PWSECRET2", "CODESECRET3", "FRAGSECRET4"} {
		if strings.Contains(all, s) {
			t.Errorf("shows %q:\n%s", s, all)
		}
	}
	for _, want := range []string{
		`console.error: fetch failed: https://api.example/v1/me?access_token=…&x=… (401).`,
		`callback http://idp.example/cb?code=… rejected`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("lacks %q:\n%s", want, all)
		}
	}
}

// A failing assert_url shows the page's URL as the step's url shows it:
// without userinfo, query values as "…", no fragment (an OAuth callback's
// code, an implicit flow's #access_token). A passing one compares the
// whole URL all the same.
func TestBrowserAssertURLHidesQueryValues(t *testing.T) {
	b := needChromium(t)
	o := htmlPages(t, map[string]string{
		"/login": `<!doctype html><title>l</title><script>location.replace("/cb?code=CODESECRET1&state=ST2#access_token=FRAGSECRET3")</script>`,
		"/cb":    `<!doctype html><title>cb</title><p id="x">ok</p>`,
	})
	run := func(src string) checks.Result {
		t.Helper()
		return browserRunner(t, b, "", src, 20*time.Second).Run(context.Background(), checks.Target{Name: "local", URL: o.URL})
	}
	res := run(`
- browser: {navigate: /login}
- browser: {wait_visible: "#x"}
- browser: {assert_url: /dashboard}
  timeout: 500ms
`)
	if res.OK || len(res.Steps) != 3 {
		t.Fatalf("want assert_url to fail: %s: %s", res.Cause, res.Err)
	}
	all := res.Err + "\n" + res.Steps[2].URL
	for _, a := range res.Steps[2].Assertions {
		all += "\n" + a.Got + "\n" + a.Want
	}
	for _, s := range []string{"CODESECRET1", "ST2", "FRAGSECRET3"} {
		if strings.Contains(all, s) {
			t.Errorf("shows %q:\n%s", s, all)
		}
	}
	if want := `assert_url: got "` + o.URL + `/cb?code=…&state=…", want "` + o.URL + `/dashboard", within 500ms`; !strings.Contains(res.Err, want) {
		t.Errorf("lacks %q:\n%s", want, res.Err)
	}
	if res := run(`
- browser: {navigate: /login}
- browser: {wait_visible: "#x"}
- browser: {assert_url: "~code=CODESECRET1&state=ST2#access_token=FRAGSECRET3$"}
`); !res.OK {
		t.Errorf("assert_url on the whole URL: %s: %s", res.Cause, res.Err)
	}
}
