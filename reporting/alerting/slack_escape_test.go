package alerting

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestSlackEscapesOriginText fires a down alert whose error text comes from
// the origin and checks what Slack receives: the mention and the disguised
// link arrive escaped, vigil's own status link still works.
func TestSlackEscapesOriginText(t *testing.T) {
	r := newReceiverRig(t)
	const hostile = `header X-Msg: got "<!channel> <https://evil.example|click> & more"`
	for range 3 { // healthy, pending, fires
		now := r.clock.Add(15 * time.Second)
		v := verdict("asset", "origin-a", "eu", now.Add(-time.Second), reporting.StateUnhealthy, 15*time.Second)
		v.Cause, v.Err = "header", hostile
		r.store.add(v)
		if err := r.a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := r.a.Flush(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	reqs := r.sl.all()
	if len(reqs) == 0 {
		t.Fatal("slack got no message")
	}
	var m struct {
		Text        string `json:"text"`
		Attachments []struct {
			Title, Text, Fallback string
			TitleLink             string `json:"title_link"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(reqs[0].Body, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Attachments) != 1 {
		t.Fatalf("slack message: %s", reqs[0].Body)
	}
	a := m.Attachments[0]
	want := `got "&lt;!channel&gt; &lt;https://evil.example|click&gt; &amp; more"`
	if !strings.Contains(a.Text, want) {
		t.Errorf("attachment text does not carry the escaped origin text %s:\n%s", want, a.Text)
	}
	for name, s := range map[string]string{"text": m.Text, "title": a.Title, "attachment text": a.Text, "fallback": a.Fallback} {
		if strings.Contains(s, "<!channel>") || strings.Contains(s, "<https://evil") {
			t.Errorf("slack %s carries unescaped markup: %s", name, s)
		}
	}
	if !strings.Contains(a.Text, "status: http://127.0.0.1:9470/check/asset?target=origin-a") ||
		a.TitleLink != "http://127.0.0.1:9470/check/asset?target=origin-a" {
		t.Errorf("status link lost: title_link %q, text:\n%s", a.TitleLink, a.Text)
	}

	// The generic webhook is JSON: its consumer gets the text as it was.
	hooks := r.hook.webhooks(t)
	if len(hooks) == 0 || !strings.Contains(hooks[0].Text, `"<!channel> <https://evil.example|click> & more"`) {
		t.Errorf("webhook payload changed the origin text: %+v", hooks)
	}
}
