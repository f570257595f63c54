package statuspage

import (
	"errors"
	"testing"
	"time"
)

func TestConfig(t *testing.T) {
	f := false
	for _, c := range []struct {
		name    string
		in      Config
		want    error
		msg     string
		refresh time.Duration
		enabled bool
	}{
		{name: "defaults", in: Config{}, refresh: DefaultRefresh, enabled: true},
		{name: "disabled", in: Config{Enabled: &f, Refresh: 30 * time.Second}, refresh: 30 * time.Second},
		{name: "too fast", in: Config{Refresh: 100 * time.Millisecond}, want: ErrRefresh, msg: "refresh: 100ms: must be between 1s and 1h"},
		{name: "negative", in: Config{Refresh: -time.Second}, want: ErrRefresh, msg: "refresh: -1s: must be between 1s and 1h"},
		{name: "too slow", in: Config{Refresh: 2 * time.Hour}, want: ErrRefresh, msg: "refresh: 2h0m0s: must be between 1s and 1h"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.in.ValidateAndSetDefaults()
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if err != nil {
				if err.Error() != c.msg {
					t.Fatalf("message %q, want %q", err, c.msg)
				}
				return
			}
			if c.in.Refresh != c.refresh || c.in.IsEnabled() != c.enabled || c.in.Title != "vigil" || !c.in.ServeArtifacts() {
				t.Fatalf("after defaults: %+v", c.in)
			}
		})
	}
}
