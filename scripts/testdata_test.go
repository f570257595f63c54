package scripts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// TestInvalidTestdata pairs every testdata/invalid-*.yaml with the exact
// error in its "# want:" line ("# check timeout:" sets the check timeout).
func TestInvalidTestdata(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid-*.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var want string
			timeout := 30 * time.Second
			for _, line := range strings.Split(string(data), "\n") {
				if v, ok := strings.CutPrefix(line, "# want: "); ok {
					want = v
				}
				if v, ok := strings.CutPrefix(line, "# check timeout: "); ok {
					if timeout, err = time.ParseDuration(v); err != nil {
						t.Fatal(err)
					}
				}
			}
			sc, err := decodeScript(string(data))
			if err != nil {
				t.Fatal(err)
			}
			err = units.Prefix("script", sc.ValidateAndSetDefaults(timeout))
			if err == nil || err.Error() != want {
				t.Errorf("error:\n%v\nwant:\n%s", err, want)
			}
		})
	}
}
