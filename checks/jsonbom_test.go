package checks_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// A JSON body that starts with a UTF-8 byte-order mark is JSON to the json
// assertions (it failed "json: body is not valid JSON").
func TestJSONBodyWithBOM(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("\xef\xbb\xbf{\"status\":\"up\",\"n\":2}"))
	}))
	defer srv.Close()
	h, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{JSON: []checks.JSONExpect{{Path: "status", Equals: "up"}, {Path: "n", Equals: 2}}}, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	res := h.Run(context.Background(), checks.Target{URL: srv.URL})
	if !res.OK {
		t.Fatalf("run failed: %s %s %+v", res.Cause, res.Err, res.Assertions)
	}
	if a := res.Assertions[1]; a.Name != "json status" || a.Got != `"up"` || !a.OK {
		t.Errorf("assertion %+v", a)
	}
}
