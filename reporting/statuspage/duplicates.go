package statuspage

import (
	"fmt"
	"strings"

	"github.com/vigil-synthetics/vigil/reporting"
)

// duplicateNotice is the banner line for the canaries that write the same
// verdicts (the store marks them: reporting.Verdict.Duplicates), one
// clause per region and vantage; "" when there are none.
func duplicateNotice(vs []reporting.Verdict) string {
	type rv struct{ region, vantage string }
	var order []rv
	inst := map[rv]map[string]bool{}
	for _, d := range reporting.DuplicatesIn(vs) {
		k := rv{d.Region, d.Vantage}
		if inst[k] == nil {
			inst[k] = map[string]bool{}
			order = append(order, k)
		}
		for _, i := range d.Instances {
			inst[k][i] = true
		}
	}
	if len(order) == 0 {
		return ""
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("region %s, vantage %s (%d instances)", k.region, k.vantage, len(inst[k])))
	}
	return "Several canaries write the same verdicts in " + strings.Join(parts, "; ") +
		": their verdicts overwrite each other. Give each canary its own agent.vantage or agent.region."
}

// withDuplicates joins the page's notice and the duplicate canaries' line.
func withDuplicates(notice string, vs []reporting.Verdict) string {
	d := duplicateNotice(vs)
	switch {
	case d == "":
		return notice
	case notice == "":
		return d
	}
	return notice + " " + d
}
