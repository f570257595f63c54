package alerting

import (
	"strings"
	"testing"
)

// TestGroupByEmptyListIsAnError: a file that writes group_by: [] is told
// so, naming the key and what to write instead (Alertmanager reads [] as
// one group for everything; here it would silently have been the
// default), while an omitted group_by takes the default.
func TestGroupByEmptyListIsAnError(t *testing.T) {
	cfg := Config{GroupBy: []string{}}
	cfg.SetKeys([]string{"group_by", "receivers"})
	err := cfg.ValidateAndSetDefaults()
	if err == nil || !strings.Contains(err.Error(), "group_by: []: an empty list is not allowed") ||
		!strings.Contains(err.Error(), "write [severity]") || !strings.Contains(err.Error(), "omit the key for the default [rule, check, severity]") {
		t.Fatalf("group_by: []: err %v", err)
	}

	omitted := Config{}
	omitted.SetKeys([]string{"receivers"})
	if err := omitted.ValidateAndSetDefaults(); err != nil || strings.Join(omitted.GroupBy, ",") != "rule,check,severity" {
		t.Fatalf("group_by omitted: err %v, group_by %v", err, omitted.GroupBy)
	}
}
