package reporting

import (
	"reflect"
	"testing"
	"time"
)

// TestFindDuplicates: instances that write one series while its newest
// instance does are duplicates; one that stopped before the newest started
// (a restart; two duplicates both restarted after a fix) is not, nor are
// other vantages or writers without an instance.
func TestFindDuplicates(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	w := func(vantage, inst string, first, last int) SeriesWriter {
		return SeriesWriter{Check: "home", Target: "a", Region: "eu", Vantage: vantage, Instance: inst, First: at(first), Last: at(last)}
	}
	for _, tc := range []struct {
		name string
		ws   []SeriesWriter
		want [][]string
	}{
		{"interleaved", []SeriesWriter{w("v1", "b", 5, 60), w("v1", "a", 0, 55)}, [][]string{{"a", "b"}}},
		{"restart", []SeriesWriter{w("v1", "a", 0, 30), w("v1", "b", 31, 60)}, nil},
		{"two vantages", []SeriesWriter{w("v1", "a", 0, 60), w("v2", "b", 0, 60)}, nil},
		{"no instance", []SeriesWriter{w("v1", "", 0, 60), w("v1", "b", 0, 60)}, nil},
		{"three, one restarted", []SeriesWriter{w("v1", "a", 0, 10), w("v1", "b", 20, 60), w("v1", "c", 15, 60)}, [][]string{{"b", "c"}}},
		{"two, then one after a fix", []SeriesWriter{w("v1", "a", 0, 50), w("v1", "b", 5, 55), w("v1", "c", 60, 90)}, nil},
		{"one of two restarted", []SeriesWriter{w("v1", "a", 0, 90), w("v1", "b", 5, 55), w("v1", "c", 60, 90)}, [][]string{{"a", "c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]string
			for _, d := range FindDuplicates(tc.ws) {
				got = append(got, d.Instances)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("FindDuplicates = %v, want %v", got, tc.want)
			}
		})
	}
}
