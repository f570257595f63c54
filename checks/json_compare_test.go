package checks_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

func fp(x float64) *float64 { return &x }

// json[].gt/gte/lt/lte compare numbers and say got and want.
func TestJSONNumericBounds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"account":{"balance":1234.5,"orders":[1,2]},"name":"42","token":7}`))
	}))
	defer srv.Close()
	for _, c := range []struct {
		name string
		j    checks.JSONExpect
		ok   bool
		err  string
	}{
		{"gt passes", checks.JSONExpect{Path: "account.balance", GT: fp(1000)}, true, ""},
		{"lt fails", checks.JSONExpect{Path: "account.balance", LT: fp(1000)}, false, "json account.balance: got 1234.5, want < 1000"},
		{"range passes", checks.JSONExpect{Path: "account.orders.#", GTE: fp(2), LTE: fp(2)}, true, ""},
		{"count below", checks.JSONExpect{Path: "account.orders.#", GT: fp(3)}, false, "json account.orders.#: got 2, want > 3"},
		{"string is not a number", checks.JSONExpect{Path: "name", GT: fp(3)}, false, `json name: got "42" (not a number), want > 3`},
		{"missing", checks.JSONExpect{Path: "nope", LTE: fp(1)}, false, "json nope: got (missing), want <= 1"},
		{"sensitive value masked", checks.JSONExpect{Path: "token", GT: fp(10)}, false, "json token: got " + checks.MaskValue("7") + ", want > 10"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := runHTTPWith(t, checks.HTTPSpec{}, checks.Expect{JSON: []checks.JSONExpect{c.j}}, srv.URL)
			if res.OK != c.ok || (!c.ok && (res.Cause != checks.CauseJSON || res.Err != c.err)) {
				t.Errorf("ok %v cause %s err %q\nwant ok %v err %q", res.OK, res.Cause, res.Err, c.ok, c.err)
			}
		})
	}
}

func TestJSONNumericBoundErrors(t *testing.T) {
	no := false
	for _, c := range []struct {
		name string
		j    checks.JSONExpect
		want string
	}{
		{"gt and gte", checks.JSONExpect{Path: "a", GT: fp(1), GTE: fp(1)}, "expect.json[0].gte: set either gt or gte, not both"},
		{"lt and lte", checks.JSONExpect{Path: "a", LT: fp(1), LTE: fp(1)}, "expect.json[0].lte: set either lt or lte, not both"},
		{"empty range", checks.JSONExpect{Path: "a", GT: fp(5), LT: fp(3)}, "expect.json[0].gt: no number is > 5 and < 3"},
		{"empty point", checks.JSONExpect{Path: "a", GTE: fp(3), LT: fp(3)}, "expect.json[0].gte: no number is >= 3 and < 3"},
		{"with exists false", checks.JSONExpect{Path: "a", GT: fp(1), Exists: &no}, "expect.json[0].exists: false cannot be combined with equals, regex, gt, gte, lt or lte"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{JSON: []checks.JSONExpect{c.j}}, checks.Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant %q", err, c.want)
			}
		})
	}
}
