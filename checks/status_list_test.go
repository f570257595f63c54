package checks_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestStatusForms decodes every accepted YAML form of expect.status and
// judges real answers with it: /<code> answers that status.
func TestStatusForms(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.WriteHeader(code)
	}))
	defer srv.Close()
	tests := []struct {
		yaml    string
		decoded checks.StatusList
		want    string // the status assertion's want
		pass    []int
		fail    []int
	}{
		{`status: [200, 304]`, checks.StatusList{"200", "304"}, "200,304", []int{200, 304}, []int{204, 404}},
		{`status: ["2xx", 304]`, checks.StatusList{"2xx", "304"}, "200-299,304", []int{204, 304}, []int{301, 500}},
		{`status: ["200-204,304", 418]`, checks.StatusList{"200-204,304", "418"}, "200-204,304,418", []int{204, 418}, []int{205}},
		{`status: "200,304"`, checks.StatusList{"200,304"}, "200,304", []int{304}, []int{302}},
		{`status: 200`, checks.StatusList{"200"}, "200", []int{200}, []int{201}},
		{`status: [503]`, checks.StatusList{"503"}, "503", []int{503}, []int{200}},
		{`status: ""`, checks.StatusList{""}, checks.DefaultStatus, []int{200, 302}, []int{404}},
	}
	for _, tc := range tests {
		t.Run(tc.yaml, func(t *testing.T) {
			var c struct {
				Expect checks.Expect `mapstructure:"expect"`
			}
			decode(t, "expect:\n  "+tc.yaml+"\n", &c)
			if !reflect.DeepEqual(c.Expect.Status, tc.decoded) {
				t.Fatalf("decoded %#v, want %#v", c.Expect.Status, tc.decoded)
			}
			run := func(code int) checks.Result {
				h, err := checks.NewHTTP(checks.HTTPSpec{Path: "/" + strconv.Itoa(code)}, c.Expect, checks.Options{Timeout: 5 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				return h.Run(context.Background(), checks.Target{URL: srv.URL})
			}
			for _, code := range tc.pass {
				if r := run(code); !r.OK || r.Assertions[0] != (checks.AssertionResult{Name: "status", OK: true, Got: strconv.Itoa(code), Want: tc.want}) {
					t.Errorf("%d: ok=%v %s %+v", code, r.OK, r.Err, r.Assertions)
				}
			}
			for _, code := range tc.fail {
				r := run(code)
				wantErr := "status " + strconv.Itoa(code) + " not in " + tc.want
				if r.OK || r.Cause != checks.CauseStatus || r.Err != wantErr {
					t.Errorf("%d: ok=%v cause=%q err=%q; want status failure %q", code, r.OK, r.Cause, r.Err, wantErr)
				}
			}
		})
	}
}

func TestStatusListErrors(t *testing.T) {
	tests := []struct {
		status checks.StatusList
		want   string
		is     error
	}{
		{checks.StatusList{"200", "20x", "3xx", "600"},
			`expect.status[1]: "20x": not a status code or range` + "\n" + `expect.status[3]: "600": not a status code or range`, checks.ErrBadStatus},
		{checks.StatusList{"200,2x"}, `expect.status: "2x": not a status code or range`, checks.ErrBadStatus},
		{checks.StatusList{"200", ""}, `expect.status[1]: "": not a status code or range`, checks.ErrBadStatus},
		{checks.StatusList{}, "expect.status: empty list (omit the key for the default 200-399)", checks.ErrBadValue},
	}
	for _, tc := range tests {
		t.Run(tc.status.String(), func(t *testing.T) {
			_, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{Status: tc.status}, checks.Options{})
			if err == nil || err.Error() != tc.want || !errors.Is(err, tc.is) {
				t.Fatalf("error:\n got %v\nwant %s (wrapping %v)", err, tc.want, tc.is)
			}
		})
	}
	// A list is as unsupported on a tcp check as a string.
	_, err := checks.NewTCP(checks.TCPSpec{}, checks.Expect{Status: checks.StatusList{"200", "304"}}, checks.Options{})
	if err == nil || err.Error() != "expect.status: tcp checks do not use it" {
		t.Errorf("tcp with status list: %v", err)
	}
}
