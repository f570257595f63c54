package influx_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/influx"
)

// TestTokenHiddenWhenEchoed: a server (or a gateway in front of InfluxDB)
// that quotes the request's Authorization header in its error body gets
// the token written literally in the config back; /healthz (Health), the
// write-failure log and read errors show it as "***", and a 1.8
// "user:password" token is hidden whole, its password alone and as the
// base64 of a Basic header.
func TestTokenHiddenWhenEchoed(t *testing.T) {
	for _, tc := range []struct {
		name, token string
		status      int
		echo        func(r *http.Request) string
		wantWrite   string // the end of the write error, as Health and the log show it
		wantRead    string
		secrets     []string
	}{
		{"2.x token, 500", "influxLITtoken55", http.StatusInternalServerError,
			func(r *http.Request) string { return "echo:" + r.URL.Path + " " + r.Header.Get("Authorization") },
			"500 Internal Server Error: echo:/api/v2/write Token ***",
			"500 Internal Server Error: echo:/api/v2/query Token ***",
			[]string{"influxLITtoken55"}},
		{"2.x token, 401", "influxLITtoken55", http.StatusUnauthorized,
			func(r *http.Request) string { return "bad credentials: " + r.Header.Get("Authorization") },
			"store.influxdb.token: rejected by InfluxDB (401 Unauthorized: bad credentials: Token ***)",
			"store.influxdb.token: rejected by InfluxDB (401 Unauthorized: bad credentials: Token ***)",
			[]string{"influxLITtoken55"}},
		{"1.8 user:password", "vuser:vpassw0rd9", http.StatusBadGateway,
			func(r *http.Request) string {
				_, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
				user, pw, _ := strings.Cut(cred, ":")
				return "gw: auth=" + cred + " user=" + user + " pw=" + pw + " basic=" + base64.StdEncoding.EncodeToString([]byte(cred))
			},
			"502 Bad Gateway: gw: auth=*** user=vuser pw=*** basic=***",
			"502 Bad Gateway: gw: auth=*** user=vuser pw=*** basic=***",
			[]string{"vpassw0rd9", base64.StdEncoding.EncodeToString([]byte("vuser:vpassw0rd9"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, log, rerr := failingStore(t, influx.Config{Token: tc.token, Bucket: "vigil/autogen"}, tc.status, "text/plain", tc.echo)
			if got := st.ExplainError(rerr); got == nil || !strings.HasSuffix(got.Error(), tc.wantRead) {
				t.Errorf("read error = %v, want it to end with %q", got, tc.wantRead)
			}
			h := waitHealth(t, st, "writes failing since", "reads failing since")
			for _, line := range strings.Split(h, "\n") {
				want := tc.wantWrite
				if strings.HasPrefix(line, "reads") {
					want = tc.wantRead
				}
				if !strings.HasSuffix(line, ": "+want) {
					t.Errorf("Health line %q does not end with %q", line, want)
				}
			}
			// The failure is logged after Health shows it: wait for the
			// line (bounded).
			l := log.String()
			for deadline := time.Now().Add(5 * time.Second); !strings.Contains(l, `err="`+tc.wantWrite+`"`) && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
				l = log.String()
			}
			if !strings.Contains(l, `err="`+tc.wantWrite+`"`) {
				t.Errorf("write failure log does not say %q:\n%s", tc.wantWrite, l)
			}
			for _, sec := range append(tc.secrets, tc.token) {
				for what, text := range map[string]string{"Health": h, "log": l, "read error": rerr.Error()} {
					if strings.Contains(text, sec) {
						t.Errorf("%s shows %q:\n%s", what, sec, text)
					}
				}
			}
		})
	}
}
